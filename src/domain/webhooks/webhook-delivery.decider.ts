/**
 * A webhook's deliveries, decided without I/O on its own stream (docs/webhooks.md, "Deliveries"):
 * queueing a message it is owed, and recording each attempt (the rule of
 * src/domain/webhooks/webhook-attempt.ts). Time and message ids are inputs.
 */
import type { Decider } from '../../core/decider.js';
import { attemptEvents, type RecordAttempt } from './webhook-attempt.js';
import type { WebhookEnvelope } from './webhook-envelope.js';
import type { WebhookEvent } from './webhook.events.js';
import { eventKey, evolveWebhook, initialWebhookState, type WebhookState } from './webhook.state.js';

export interface QueueMessage {
  type: 'QueueMessage';
  webhook_id: number;
  message_id: string;
  envelope: WebhookEnvelope;
  /**
   * Drop the envelope's events this webhook was queued before (same type, ticker and date), and
   * queue nothing when none is left: the live dispatcher's "once per ticker and date".
   */
  only_new_events?: boolean;
}

export type DeliveryCommand = QueueMessage | RecordAttempt;

function decide(state: WebhookState, command: DeliveryCommand, now: Date): WebhookEvent[] {
  switch (command.type) {
    case 'QueueMessage':
      return decideQueue(state, command, now);
    case 'RecordAttempt':
      return attemptEvents(state, command, now);
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

function decideQueue(state: WebhookState, command: QueueMessage, now: Date): WebhookEvent[] {
  // A message for a deleted or deactivated webhook is not owed: nothing to queue.
  if (!state.exists || state.deleted || !state.is_active || state.event_type === null) return [];
  // An id is queued once, even after its message was delivered or given up: a dispatcher that
  // decides a batch again (after a crash) derives the same id and queues nothing twice.
  if (state.queued.has(command.message_id) || state.messages.has(command.message_id)) return [];
  const { webhook_id, message_id } = command;
  let envelope = command.envelope;
  if (command.only_new_events) {
    const fresh = envelope.events.filter((e) => !state.sent_events.has(eventKey(e)));
    if (fresh.length === 0) return [];
    if (fresh.length < envelope.events.length) envelope = { ...envelope, events: fresh };
  }
  return [{ type: 'WebhookMessageQueued', data: { webhook_id, message_id, event_type: state.event_type, envelope, at: now.toISOString() } }];
}

export const webhookDeliveryDecider = { initialState: initialWebhookState, evolve: evolveWebhook, decide } satisfies Decider<WebhookState, DeliveryCommand, WebhookEvent>;
