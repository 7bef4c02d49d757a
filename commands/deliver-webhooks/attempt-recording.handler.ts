/**
 * Records what one attempt of a message gave, through the command handler on the webhook's
 * stream: `RecordAttempt` decided by `webhook-delivery.decider.ts` at the transport time of each
 * round (a conflict decides it again, later).
 */
import { wallClockOf, type Clock } from '../../src/core/clock.js';
import { handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { RecordAttempt } from '../../src/domain/webhooks/webhook-attempt.js';
import { webhookStream, type WebhookEvent } from '../../src/domain/webhooks/webhook.events.js';
import { webhookDeliveryDecider, type DeliveryCommand } from '../../src/domain/webhooks/webhook-delivery.decider.js';

export interface DeliveryDeps {
  events: EventStore;
  clock: Clock;
  /**
   * Transport time (src/core/clock.ts): the signed `webhook-timestamp`, when a message is queued and
   * attempted, when its next attempt is due; default `clock`. A pinned data clock never reaches a
   * retry's time.
   */
  transportClock?: Clock;
}

/** The clock of sending: the transport clock, or the one clock a caller gave. */
export const sendingTime = (deps: Pick<DeliveryDeps, 'clock' | 'transportClock'>): Date => wallClockOf(deps).now();

/** Decides `command` on the webhook's stream at the sending time, read again on each round. */
export async function runDelivery(deps: DeliveryDeps, command: DeliveryCommand): Promise<WebhookEvent[]> {
  const { events } = await handleCommand(deps.events, webhookDeliveryDecider, webhookStream(command.webhook_id), command, wallClockOf(deps));
  return events;
}

/** Records an attempt's result; the events written (none when the message was no longer owed). */
export function recordAttempt(deps: DeliveryDeps, command: RecordAttempt): Promise<WebhookEvent[]> {
  return runDelivery(deps, command);
}
