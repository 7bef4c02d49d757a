import { notFound } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { webhookDeliveries, webhookRetries, webhooks, webhooksProjection, type WebhookDeliveryDoc, type WebhookDoc } from '../../projections/webhooks/webhooks.projection.js';
import { timestampOf } from '../../src/web/timestamp.js';
import { latestOf, lastPositionFrom, projectedUpTo } from '../shared/read-your-writes.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseWebhookId } from '../../src/web/webhook-id.js';

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
  /** The message the attempt sent: its `webhook-id` header, the same on every attempt of it; the `delivery_id` to resend it by. */
  message_id: string;
  /**
   * The attempt's number, counted per message from 1 (a resend's attempts follow the earlier ones).
   * @isInt
   */
  attempt: number;
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
export async function listWebhooks(reads: ReadStore, accountId: string, held: CaughtUp = { current: null }): Promise<WebhooksResponse> {
  const page = held.current ?? (await ownWebhooks(reads, accountId));
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

/**
 * The latest attempts of one of the account's webhooks; 404 for an unknown, deleted or another
 * account's webhook. With `events`, first reads your own writes: waits (5 s at most) until the
 * read model holds every event of that webhook's stream (a registration or test delivery another
 * replica answered a moment ago); in the usual case the stream has nothing past the document.
 */
export async function listDeliveries(reads: ReadStore, accountId: string, webhookId: number, events?: Pick<EventStore, 'readStream'>): Promise<WebhookDeliveriesResponse> {
  await ownWebhook(reads, accountId, webhookId, events);
  const page = await reads.find(webhookDeliveries, { webhook_id: webhookId }, { sort: [['created_at', -1]], limit: DELIVERIES_SHOWN });
  const deliveries = page.items.map((d) => ({
    message_id: d.message_id,
    attempt: d.attempt,
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

/** Attempts the account page reads for a webhook's messages: the latest, of the last 30 days. */
export const MESSAGE_ATTEMPTS_READ = 200;

/** One message a webhook was sent, with its attempts (newest first), as the account page lists it. */
export interface DeliveredMessage {
  message_id: string;
  kind: 'live' | 'test';
  event_type: 'divergence_event' | 'score_move';
  event_count: number;
  /** Its latest attempts, newest first. */
  attempts: Pick<WebhookDeliveryDoc, 'attempt' | 'ok' | 'status_code' | 'error' | 'created_at'>[];
  /** When its next attempt is due, while it is owed (a retry, or a resend not sent yet). */
  next_attempt_at: string | null;
}

/**
 * The messages of one of the account's webhooks with an attempt since `since` (the account page
 * gives 30 days ago: what can be resent), newest attempt first, from its latest 200 attempts; 404
 * and read-your-writes as `listDeliveries`.
 */
export async function listDeliveredMessages(reads: ReadStore, accountId: string, webhookId: number, since: string, events?: Pick<EventStore, 'readStream'>): Promise<DeliveredMessage[]> {
  await ownWebhook(reads, accountId, webhookId, events);
  const [page, owed] = await Promise.all([
    reads.find(webhookDeliveries, { webhook_id: webhookId, created_at: { $gte: since } }, { sort: [['created_at', -1]], limit: MESSAGE_ATTEMPTS_READ }),
    reads.find(webhookRetries, { webhook_id: webhookId }, { limit: LIST_CAP }),
  ]);
  const due = new Map(owed.items.map((r) => [r.message_id, r.next_attempt_at]));
  const out = new Map<string, DeliveredMessage>();
  for (const d of page.items) {
    let m = out.get(d.message_id);
    if (!m) out.set(d.message_id, (m = { message_id: d.message_id, kind: d.kind, event_type: d.event_type, event_count: d.event_count, attempts: [], next_attempt_at: due.get(d.message_id) ?? null }));
    m.attempts.push({ attempt: d.attempt, ok: d.ok, status_code: d.status_code, error: d.error, created_at: d.created_at });
  }
  return [...out.values()];
}

/** The account's webhook (404 for an unknown, deleted or another account's), its stream's events projected first when `events` is given. */
async function ownWebhook(reads: ReadStore, accountId: string, webhookId: number, events?: Pick<EventStore, 'readStream'>): Promise<WebhookDoc> {
  let hook = await reads.get(webhooks, String(webhookId));
  const tail = events ? await lastPositionFrom(events, webhookStream(webhookId), hook ? hook.revision + 1 : 0) : null;
  if (tail !== null) {
    await projectedUpTo(reads, webhooksProjection.name, tail);
    hook = await reads.get(webhooks, String(webhookId));
  }
  if (!hook || hook.deleted || hook.account_id !== accountId) throw notFound(`no webhook ${webhookId}`);
  return hook;
}

/**
 * Read your own writes on any replica: resolves once the webhooks read model holds every event of
 * the account's webhook streams as they are now (a registration, test delivery or deletion another
 * replica answered a moment ago), 5 s at most. Its live webhooks' streams are read from the
 * revision the read model holds; a webhook registered since is found by its id.
 */
export async function webhooksCaughtUp(reads: ReadStore, events: Pick<EventStore, 'readStream'>, accountId: string): Promise<CaughtUp> {
  // Counted first: the account's list, read after, holds each of its webhooks up to that id.
  const projected = await reads.count(webhooks, {});
  const own = await ownWebhooks(reads, accountId);
  // Only what follows the revision each document holds: in the usual case nothing, and then the
  // list just read is the answer (no checkpoint read, no second find: a repeated call stays cheap).
  const [tails, registered] = await Promise.all([
    Promise.all(own.items.map((w) => lastPositionFrom(events, webhookStream(w.id), w.revision + 1))),
    registeredAfter(events, accountId, projected),
  ]);
  const latest = latestOf([...tails, ...registered]);
  if (latest === null) return { current: own };
  await projectedUpTo(reads, webhooksProjection.name, latest);
  return { current: null };
}

/** What `webhooksCaughtUp` found: the account's list when the read model already held its every write (null: read it again). */
export interface CaughtUp {
  current: Page<WebhookDoc> | null;
}

function ownWebhooks(reads: ReadStore, accountId: string): Promise<Page<WebhookDoc>> {
  return reads.find(webhooks, { account_id: accountId, deleted: false }, { sort: [['id', 1]], limit: LIST_CAP });
}

/**
 * The last positions of the account's webhooks with an id above `projected`: none is in the read
 * model yet. The registry gives ids 1, 2, … in order and every webhook keeps its document, so the
 * read model's count is its newest id, and the first id without a stream is past the newest.
 */
async function registeredAfter(events: Pick<EventStore, 'readStream'>, accountId: string, projected: number): Promise<string[]> {
  const out: string[] = [];
  for (let id = projected + 1; ; id++) {
    const stream = await events.readStream(webhookStream(id));
    if (stream.length === 0) return out;
    if ((stream[0]!.data as { account_id?: unknown }).account_id === accountId) out.push(stream[stream.length - 1]!.position);
  }
}

export async function runList(call: MeteredCall): Promise<WebhooksResponse> {
  const held = await webhooksCaughtUp(call.ctx.reads, call.ctx.events, call.principal.account_id);
  const out = await listWebhooks(call.ctx.reads, call.principal.account_id, held);
  await call.charge('webhooks');
  return out;
}

export async function runDeliveries(call: MeteredCall, webhookId: string): Promise<WebhookDeliveriesResponse> {
  const id = parseWebhookId(webhookId);
  const out = await listDeliveries(call.ctx.reads, call.principal.account_id, id, call.ctx.events);
  await call.charge('webhooks');
  return out;
}
