import { webhookDeliveryDecider, type DeliveryCommand } from '../../src/domain/webhooks/webhook-delivery.decider.js';
import { webhookRegistryDecider, type RegisterWebhook, type RegistryState } from '../../src/domain/webhooks/webhook-registry.decider.js';
import { webhookDecider, type ManageWebhookCommand } from '../../src/domain/webhooks/webhook.decider.js';
import { webhookResendDecider, type ResendCommand } from '../../src/domain/webhooks/webhook-resend.decider.js';
import { eventsOf } from '../../src/core/decider.js';
import type { AttemptResult } from '../../src/domain/webhooks/webhook-attempt.js';
import { liveEnvelope, scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';
import type { WebhookEvent, WebhookRegistryEvent } from '../../src/domain/webhooks/webhook.events.js';
import { evolveWebhook, initialWebhookState, type WebhookState } from '../../src/domain/webhooks/webhook.state.js';

/** Commands and results of the webhook deciders, as their tests and their projection's tests give them. */
export const T0 = new Date('2024-03-01T12:00:00.000Z');
export const at = (ms: number) => new Date(T0.getTime() + ms);
export const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
export const ENVELOPE = liveEnvelope([scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 70, prior_score: 55.5 })], T0);

export const failed: AttemptResult = { ok: false, status_code: 500, error: 'receiver answered 500' };
export const delivered: AttemptResult = { ok: true, status_code: 204, error: null };
export const gone: AttemptResult = { ok: false, status_code: 410, error: 'receiver answered 410' };

/** Any command of the four webhook deciders (registry, management, delivery, resend). */
export type WebhookCommand = RegisterWebhook | ManageWebhookCommand | DeliveryCommand | ResendCommand;
export type AnyWebhookEvent = WebhookEvent | WebhookRegistryEvent;

export const register = (account_id: string, url = 'https://hooks.example.com/in', event_type = 'score_move'): RegisterWebhook => ({
  type: 'RegisterWebhook',
  account_id,
  event_type,
  url,
  secret: SECRET,
});
export const queue = (webhook_id: number, message_id: string): DeliveryCommand => ({ type: 'QueueMessage', webhook_id, message_id, envelope: ENVELOPE });
export const attempt = (webhook_id: number, message_id: string, result: AttemptResult, kind: 'live' | 'test' = 'live'): DeliveryCommand => ({
  type: 'RecordAttempt',
  webhook_id,
  message_id,
  kind,
  event_type: 'score_move',
  event_count: 1,
  result,
});

const isRegistry = (e: AnyWebhookEvent): e is WebhookRegistryEvent => e.type === 'WebhookIdAssigned' || e.type === 'WebhookIdReleased';

/** The registry stream's events among `events`. */
export const registryStream = (events: readonly AnyWebhookEvent[]): WebhookRegistryEvent[] => events.filter(isRegistry);
/** The events of the stream `webhook-<id>` among `events`. */
export const webhookStreamOf = (events: readonly AnyWebhookEvent[], id: number): WebhookEvent[] =>
  events.filter((e): e is WebhookEvent => !isRegistry(e) && e.data.webhook_id === id);
/** Webhook `id`'s state after `events`. */
export const webhookState = (events: readonly AnyWebhookEvent[], id: number): WebhookState => webhookStreamOf(events, id).reduce(evolveWebhook, initialWebhookState());
const registryState = (events: readonly AnyWebhookEvent[]): RegistryState =>
  registryStream(events).reduce<RegistryState>(webhookRegistryDecider.evolve, webhookRegistryDecider.initialState());

/** Decides `command` with the decider it belongs to, on the stream it is decided on, after `events`. */
export function decideAfter(events: readonly AnyWebhookEvent[], command: WebhookCommand, now: Date): AnyWebhookEvent[] {
  switch (command.type) {
    case 'RegisterWebhook':
      return webhookRegistryDecider.decide(registryState(events), command, now);
    case 'DeleteWebhook':
    case 'ReactivateWebhook':
    case 'RotateWebhookSecret':
      return webhookDecider.decide(webhookState(events, command.webhook_id), command, now);
    case 'QueueMessage':
    case 'RecordAttempt':
      return webhookDeliveryDecider.decide(webhookState(events, command.webhook_id), command, now);
    case 'ResendMessage':
    case 'ResendFailed':
      return eventsOf(webhookResendDecider.decide(webhookState(events, command.webhook_id), command, now));
  }
}

/** Runs commands one after the other with the real deciders and returns every event, as a store would hold them. */
export function history(...steps: [WebhookCommand, Date][]): AnyWebhookEvent[] {
  const events: AnyWebhookEvent[] = [];
  for (const [command, now] of steps) events.push(...decideAfter(events, command, now));
  return events;
}

export const resend = (webhook_id: number, message_id: string, request: string, account_id = 'acct_a'): ResendCommand => ({ type: 'ResendMessage', account_id, webhook_id, message_id, request });
export const resendFailed = (webhook_id: number, since: Date, request: string, account_id = 'acct_a'): ResendCommand => ({
  type: 'ResendFailed',
  account_id,
  webhook_id,
  since: since.toISOString(),
  request,
});
