import type { AttemptResult, WebhookCommand } from '../../commands/manage-webhooks/webhook.decider.js';
import { liveEnvelope, scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';

/** Commands and results of the webhook decider, as its tests and its projection's tests give them. */
export const T0 = new Date('2024-03-01T12:00:00.000Z');
export const at = (ms: number) => new Date(T0.getTime() + ms);
export const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
export const ENVELOPE = liveEnvelope([scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 70, prior_score: 55.5 })], T0);

export const failed: AttemptResult = { ok: false, status_code: 500, error: 'receiver answered 500' };
export const delivered: AttemptResult = { ok: true, status_code: 204, error: null };
export const gone: AttemptResult = { ok: false, status_code: 410, error: 'receiver answered 410' };

export const register = (account_id: string, url = 'https://hooks.example.com/in', event_type = 'score_move'): WebhookCommand => ({
  type: 'RegisterWebhook',
  account_id,
  event_type,
  url,
  secret: SECRET,
});
export const queue = (webhook_id: number, message_id: string): WebhookCommand => ({ type: 'QueueMessage', webhook_id, message_id, envelope: ENVELOPE });
export const attempt = (webhook_id: number, message_id: string, result: AttemptResult, kind: 'live' | 'test' = 'live'): WebhookCommand => ({
  type: 'RecordAttempt',
  webhook_id,
  message_id,
  kind,
  event_type: 'score_move',
  event_count: 1,
  result,
});
