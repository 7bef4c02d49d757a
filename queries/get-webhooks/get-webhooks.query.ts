import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { webhookDeliveries, webhooks } from '../../projections/webhooks/webhooks.projection.js';
import { timestampOf } from '../shared/instants.js';

/** Attempts `GET /v1/webhooks/{webhook_id}/deliveries` lists, newest first. */
export const DELIVERIES_SHOWN = 50;
/** More than an account can have (10 live webhooks): the list is never cut. */
const LIST_CAP = 100;

// Plain interfaces: tsoa reads them for the OpenAPI document.
export interface WebhookListItem {
  /** @isInt */
  id: number;
  event_type: 'divergence_event' | 'score_move';
  /** @format uri */
  url: string;
  /** False once deactivated (5 days of failures, or a 410 Gone); `POST /v1/webhooks/{webhook_id}/enable` makes it active again. */
  is_active: boolean;
  /**
   * Failed attempts (live or test) since the last success or re-enabling.
   * @isInt
   */
  consecutive_failures: number;
  /**
   * The last attempt's time, live or test, `YYYY-MM-DD HH:MM:SS` UTC; null before the first.
   * @format timestamp
   */
  last_fired_at: string | null;
}

export interface WebhooksResponse {
  /** Your webhooks, in id order; deleted ones are not listed, and the secret never is. */
  webhooks: WebhookListItem[];
}

export interface WebhookDeliveryItem {
  /** `live` or `test`. */
  kind: 'live' | 'test';
  event_type: 'divergence_event' | 'score_move';
  /**
   * Events in the message.
   * @isInt
   */
  event_count: number;
  /** True when the receiver answered 2xx. */
  ok: boolean;
  /**
   * The receiver's HTTP status; null when no answer came.
   * @isInt
   */
  status_code: number | null;
  /** Why the attempt failed, in the service's own words; null on success. */
  error: string | null;
  /**
   * When the attempt was made, `YYYY-MM-DD HH:MM:SS` UTC.
   * @format timestamp
   */
  created_at: string;
}

export interface WebhookDeliveriesResponse {
  /** The latest 50 attempts, newest first. */
  deliveries: WebhookDeliveryItem[];
  /**
   * Attempts listed.
   * @isInt
   */
  count: number;
}

/** The account's webhooks (deleted ones left out), in id order. */
export async function listWebhooks(reads: ReadStore, accountId: string): Promise<WebhooksResponse> {
  const page = await reads.find(webhooks, { account_id: accountId, deleted: false }, { sort: [['id', 1]], limit: LIST_CAP });
  return {
    webhooks: page.items.map((w) => ({
      id: w.id,
      event_type: w.event_type,
      url: w.url,
      is_active: w.is_active,
      consecutive_failures: w.consecutive_failures,
      last_fired_at: w.last_fired_at === null ? null : timestampOf(w.last_fired_at),
    })),
  };
}

/** The latest attempts of one of the account's webhooks; 404 for an unknown, deleted or another account's webhook. */
export async function listDeliveries(reads: ReadStore, accountId: string, webhookId: number): Promise<WebhookDeliveriesResponse> {
  const hook = await reads.get(webhooks, String(webhookId));
  if (!hook || hook.deleted || hook.account_id !== accountId) throw notFound(`no webhook ${webhookId}`);
  const page = await reads.find(webhookDeliveries, { webhook_id: webhookId }, { sort: [['created_at', -1]], limit: DELIVERIES_SHOWN });
  const deliveries = page.items.map((d) => ({
    kind: d.kind,
    event_type: d.event_type,
    event_count: d.event_count,
    ok: d.ok,
    status_code: d.status_code,
    error: d.error,
    created_at: timestampOf(d.created_at),
  }));
  return { deliveries, count: deliveries.length };
}
