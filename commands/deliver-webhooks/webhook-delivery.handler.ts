/**
 * A webhook's deliveries through the one command handler (what is decided, and why:
 * `webhook-delivery.decider.ts`): queueing a message it is owed, and sending its next attempt.
 */
import { foldStream } from '../../src/core/command-handler.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import type { AttemptResult } from '../../src/domain/webhooks/webhook-attempt.js';
import type { WebhookEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { deliveryHeaders } from '../../src/domain/webhooks/webhook-signing.js';
import { isUsable, signingSecrets } from '../../src/domain/webhooks/webhook.state.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { webhookDeliveryDecider } from '../../src/domain/webhooks/webhook-delivery.decider.js';
import { recordAttempt, runDelivery, sendingTime, type DeliveryDeps } from './attempt-recording.handler.js';

/**
 * For the dispatcher: owes `envelope` to the webhook (nothing when it is deleted or inactive).
 * Returns the message id, or null when nothing was queued. `messageId`: a deterministic id (the
 * live dispatcher's), queued at most once; else a random one from the ids port. `onlyNewEvents`:
 * leave out the events this webhook was queued before (same type, ticker and date).
 */
export async function queueMessage(
  deps: DeliveryDeps & { ids?: Ids },
  id: number,
  envelope: WebhookEnvelope,
  options: { messageId?: string; onlyNewEvents?: boolean } = {},
): Promise<string | null> {
  const messageId = options.messageId ?? deps.ids?.next('msg_', 16);
  if (!messageId) throw new Error('queueMessage needs a message id or the ids port');
  const queued = await runDelivery(deps, { type: 'QueueMessage', webhook_id: id, message_id: messageId, envelope, only_new_events: options.onlyNewEvents });
  return queued.length > 0 ? messageId : null;
}

/**
 * For the dispatcher: the next attempt of a queued (or resent) message: its envelope's same bytes,
 * with fresh headers for this attempt, and the attempt recorded. Null when the message is no longer owed
 * (delivered, given up, or its webhook deleted or deactivated), its next attempt is not due yet by
 * the clock, or the webhook is not active.
 */
export async function deliverMessage(deps: DeliveryDeps & { sender: WebhookSender; personal: PersonalData }, id: number, messageId: string): Promise<AttemptResult | null> {
  const hook = (await foldStream(deps.events, webhookDeliveryDecider, webhookStream(id))).state;
  const message = hook.messages.get(messageId);
  if (!isUsable(hook) || !hook.is_active || !message) return null;
  // Not due yet (a read model behind the log may still show an earlier time).
  if (Date.parse(message.next_attempt_at) > sendingTime(deps).getTime()) return null;
  const body = JSON.stringify(message.envelope);
  // Signed at the instant it leaves: the receiver checks this time against its own clock.
  const at = sendingTime(deps);
  const headers = deliveryHeaders(await signingSecrets(hook, deps.personal, at), messageId, at, body);
  const sent = await deps.sender.send({ url: hook.url, body, headers: { ...headers } });
  const result: AttemptResult = { ok: sent.ok, status_code: sent.status_code, error: sent.error };
  // A resent test stays a test: it never deactivates the webhook.
  const { kind, event_type, envelope } = message;
  await recordAttempt(deps, { type: 'RecordAttempt', webhook_id: id, message_id: messageId, kind, event_type, event_count: envelope.events.length, result, round: message.round });
  return result;
}
