/**
 * What a resend request says (`POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend`,
 * `POST /v1/webhooks/{webhook_id}/resend-failed`, and the account page's forms), read and checked,
 * and the answer it gets.
 */
import { badRequest } from '../../src/core/errors.js';
import { readInstant } from '../../src/domain/instants.js';
import type { ResendOutcome } from '../../src/domain/webhooks/webhook-resend.decider.js';
import { timestampOf } from '../../src/web/timestamp.js';

export interface ResendFailedRequest {
  /**
   * Resend the failed messages made at or after this instant: an RFC 3339 date-time with a zone,
   * or the `YYYY-MM-DD HH:MM:SS` UTC form `created_at` has. Earlier than 30 days ago means 30 days ago.
   * @example "2024-02-29T00:00:00Z"
   */
  since: string;
}

export interface ResendResponse {
  /** @isInt */
  webhook_id: number;
  /** The messages owed again, each sent under this id (its `webhook-id`) within seconds; oldest first. */
  message_ids: string[];
  /**
   * Messages owed again.
   * @isInt
   */
  count: number;
  /**
   * A bulk resend's lower bound as applied (30 days back at most), `YYYY-MM-DD HH:MM:SS` UTC; null for one delivery.
   * @format timestamp
   */
  since: string | null;
  /** The request's `Idempotency-Key`, or the one the service gave it when none was sent. */
  idempotency_key: string;
  /** True when an earlier request with this key decided the resend: this one sent nothing more. */
  replayed: boolean;
  /**
   * When the resend was decided, `YYYY-MM-DD HH:MM:SS` UTC.
   * @format timestamp
   */
  requested_at: string;
}

/** A message id as the service makes them (`msg_` and base64url). */
export const DELIVERY_ID = /^msg_[A-Za-z0-9_-]{1,64}$/;
/** What an `Idempotency-Key` may be: 1 to 255 visible ASCII characters (`!` to `~`, Stripe's bound). */
export const IDEMPOTENCY_KEY = /^[!-~]{1,255}$/;

const invalid = (parameter: string, message: string) => badRequest(`${parameter} ${message}`, { errors: [{ parameter, message }] });

export function parseDeliveryId(text: string): string {
  if (!DELIVERY_ID.test(text)) throw invalid('delivery_id', 'must be a message id (msg_…, as /deliveries lists it)');
  return text;
}

/** The header's key, or undefined when none was sent (each request then resends). */
export function parseIdempotencyKey(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(text)) throw invalid('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
  return text;
}

/** `since` as an ISO instant: RFC 3339 with a zone, or the API's `YYYY-MM-DD HH:MM:SS` (UTC). */
export function parseSince(text: string): string {
  const reading = readInstant(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(text) ? `${text}Z` : text, 'up');
  if (!reading.ok) throw invalid('since', `must be ${reading.reason}, or YYYY-MM-DD HH:MM:SS (UTC)`);
  return reading.iso;
}

export function resendResponse(webhookId: number, o: ResendOutcome): ResendResponse {
  return {
    webhook_id: webhookId,
    message_ids: o.message_ids,
    count: o.message_ids.length,
    since: o.since === null ? null : timestampOf(o.since),
    idempotency_key: o.request,
    replayed: o.replayed,
    requested_at: timestampOf(o.at),
  };
}
