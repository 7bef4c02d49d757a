/**
 * Resending messages a webhook was sent (docs/webhooks.md, "Resending deliveries"), decided on
 * the webhook's own stream: one message, or every message whose last attempt failed since an
 * instant, each owed again under its own message id (the dispatcher sends it, as any message it
 * owes). The request's idempotency key is kept in the stream: two requests with one key, on one
 * replica or two, resend once, because the second is decided again on the stream the first wrote.
 */
import type { Decider, Decision } from '../../core/decider.js';
import { AppError, notFound } from '../../core/errors.js';
import type { WebhookEvent } from './webhook.events.js';
import { ownedBy } from './webhook.decider.js';
import { RESEND_WINDOW_MS, evolveWebhook, initialWebhookState, type ResendRecord, type WebhookState } from './webhook.state.js';

export { RESEND_WINDOW_MS };

export type ResendCommand =
  | { type: 'ResendMessage'; account_id: string; webhook_id: number; message_id: string; request: string }
  /** `since`: an ISO instant; earlier than 30 days ago means 30 days ago. */
  | { type: 'ResendFailed'; account_id: string; webhook_id: number; since: string; request: string };

/** What a resend request is answered: the messages owed again, and whether an earlier request with its key decided it. */
export interface ResendOutcome extends ResendRecord {
  request: string;
  replayed: boolean;
}

type Resent = Decision<WebhookState, WebhookEvent, ResendOutcome>;

const replay = (request: string, r: ResendRecord): ResendOutcome => ({ request, ...r, replayed: true });

/** One message: known here, and made within the last 30 days (410 `delivery_expired` after). */
function oneMessage(state: WebhookState, command: Extract<ResendCommand, { type: 'ResendMessage' }>, now: Date): string[] {
  const sent = state.sent.get(command.message_id);
  if (!sent) throw notFound(`no delivery ${command.message_id} of webhook ${command.webhook_id}`);
  if (now.getTime() - Date.parse(sent.first_at) > RESEND_WINDOW_MS) {
    throw new AppError('delivery_expired', `delivery ${command.message_id} was made at ${sent.first_at}: deliveries can be resent for 30 days`, { made_at: sent.first_at });
  }
  return [command.message_id];
}

/** The messages made since `since` (30 days at most) whose last attempt failed, oldest first. */
function failedSince(state: WebhookState, since: string, now: Date): { from: string; ids: string[] } {
  const from = new Date(Math.max(Date.parse(since), now.getTime() - RESEND_WINDOW_MS)).toISOString();
  const ids: string[] = [];
  for (const [id, m] of state.sent) if (m.last_ok === false && m.first_at >= from) ids.push(id);
  return { from, ids };
}

/** Another request under a key already used (a different message, or a bulk resend): 409. */
function sameRequest(earlier: ResendRecord, command: ResendCommand): boolean {
  return command.type === 'ResendMessage' ? earlier.since === null && earlier.message_ids[0] === command.message_id : earlier.since !== null;
}

function decide(state: WebhookState, command: ResendCommand, now: Date): Resent {
  ownedBy(state, command.account_id, command.webhook_id);
  const earlier = state.resends.get(command.request);
  if (earlier) {
    if (!sameRequest(earlier, command)) throw new AppError('conflict', `the idempotency key ${command.request} was used for another resend of this webhook`);
    return { events: [], result: replay(command.request, earlier) };
  }
  if (!state.is_active) throw new AppError('conflict', `webhook ${command.webhook_id} is deactivated: enable it, then resend`);
  const at = now.toISOString();
  const picked = command.type === 'ResendMessage' ? { from: null, ids: oneMessage(state, command, now) } : failedSince(state, command.since, now);
  const record: ResendRecord = { since: picked.from, message_ids: picked.ids, at };
  const result: ResendOutcome = { request: command.request, ...record, replayed: false };
  if (picked.ids.length === 0) return { events: [], result };
  const messages = picked.ids.map((message_id) => ({ message_id, attempts_before: state.sent.get(message_id)!.attempts }));
  return { events: [{ type: 'WebhookMessagesResent', data: { webhook_id: command.webhook_id, request: command.request, since: picked.from, messages, at } }], result };
}

export const webhookResendDecider = { initialState: initialWebhookState, evolve: evolveWebhook, decide } satisfies Decider<WebhookState, ResendCommand, WebhookEvent, ResendOutcome>;
