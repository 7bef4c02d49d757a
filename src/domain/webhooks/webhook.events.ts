/**
 * Webhook events. Each webhook has its own stream, `webhook-<id>`: its registration, deletion,
 * every delivery attempt (live and test), deactivation and reactivation. Ids are integers handed
 * out by the registry stream `webhook-registry`, which also holds which account owns which live
 * webhook, so that "at most 10 per account" is decided race-free on one stream.
 */
import type { WebhookEnvelope, WebhookEventType } from './webhook-envelope.js';

export const WEBHOOK_REGISTRY_STREAM = 'webhook-registry';
export const WEBHOOK_STREAM_PREFIX = 'webhook-';
export const webhookStream = (webhookId: number) => `${WEBHOOK_STREAM_PREFIX}${webhookId}`;

/** Registry: an id is given to an account's new webhook. The id is the count of ids given before it, plus one. */
export interface WebhookIdAssigned {
  type: 'WebhookIdAssigned';
  data: { webhook_id: number; account_id: string; at: string };
}

/** Registry: a deleted webhook no longer counts against its account's limit (its id is never given again). */
export interface WebhookIdReleased {
  type: 'WebhookIdReleased';
  data: { webhook_id: number; account_id: string; at: string };
}

export type WebhookRegistryEvent = WebhookIdAssigned | WebhookIdReleased;

/**
 * The signing secret is kept in the log: every delivery is signed with it, so it cannot be
 * stored as a hash the way API keys are. It is shown to the customer once, at registration, and
 * written sealed under the account's key (`pii:v1:…`, src/core/personal-data.port.ts); earlier
 * registrations hold it sealed under the data key (`sealed:v1:…`) or in clear, which `PersonalData.open` also opens.
 */
export interface WebhookRegistered {
  type: 'WebhookRegistered';
  data: { webhook_id: number; account_id: string; event_type: WebhookEventType; url: string; secret: string; at: string };
}

export interface WebhookDeleted {
  type: 'WebhookDeleted';
  data: { webhook_id: number; at: string };
}

/**
 * One attempt to deliver one message. `message_id` is the message's `webhook-id` header, the same
 * on every attempt of it; `attempt` counts from 1, resends included. `next_attempt_at` is when the
 * next attempt of a failed message in flight is due (null: delivered, given up, or a test sent by
 * `/test`). `error` is the service's own words, never the receiver's body. `envelope`: the body a
 * test sent (on its one attempt), so that a resend sends it again; a live message's is queued.
 */
export interface WebhookDeliveryAttempted {
  type: 'WebhookDeliveryAttempted';
  data: {
    webhook_id: number;
    message_id: string;
    kind: 'live' | 'test';
    event_type: WebhookEventType;
    event_count: number;
    attempt: number;
    ok: boolean;
    status_code: number | null;
    error: string | null;
    next_attempt_at: string | null;
    envelope?: WebhookEnvelope;
    at: string;
  };
}

/** `gone`: the receiver answered 410; `failing`: every attempt failed for 5 days. */
export interface WebhookDeactivated {
  type: 'WebhookDeactivated';
  data: { webhook_id: number; reason: 'gone' | 'failing'; at: string };
}

/**
 * A new signing secret (sealed, as at registration). Until `previous_until` (transport time)
 * every delivery is signed with both, so a receiver can move to the new secret at its own pace.
 */
export interface WebhookSecretRotated {
  type: 'WebhookSecretRotated';
  data: { webhook_id: number; secret: string; previous_until: string; at: string };
}

export interface WebhookReactivated {
  type: 'WebhookReactivated';
  data: { webhook_id: number; at: string };
}

/**
 * A live message decided for a webhook (one per webhook per publication batch), before its first
 * attempt: the log, not a read model, says what is owed, so a crash between the decision and the
 * delivery loses nothing. The envelope is kept whole so every attempt sends the same bytes.
 */
export interface WebhookMessageQueued {
  type: 'WebhookMessageQueued';
  data: { webhook_id: number; message_id: string; event_type: WebhookEventType; envelope: WebhookEnvelope; at: string };
}

/**
 * Messages sent before, owed again at the account's request (a resend): each goes again under its
 * own `message_id` with the same envelope, its attempts numbered on from `attempts_before`, retried
 * on failure like a new message. `request` is the request's idempotency key (a key resends once);
 * `since`: the "every failed message since" of a bulk resend, null for one message.
 */
export interface WebhookMessagesResent {
  type: 'WebhookMessagesResent';
  data: { webhook_id: number; request: string; since: string | null; messages: { message_id: string; attempts_before: number }[]; at: string };
}

export type WebhookEvent =
  | WebhookRegistered
  | WebhookDeleted
  | WebhookMessageQueued
  | WebhookMessagesResent
  | WebhookDeliveryAttempted
  | WebhookDeactivated
  | WebhookReactivated
  | WebhookSecretRotated;
