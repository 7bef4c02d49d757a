/**
 * Webhooks' read models (docs/webhooks.md, "How webhooks are stored"), from the `webhook-<id>`
 * streams: one document per webhook (never its secret: that stays in the log), one per delivery
 * attempt, and the live messages still owed for the dispatcher.
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { WebhookEventType } from '../../src/domain/webhooks/webhook-envelope.js';
import { WEBHOOK_STREAM_PREFIX, type WebhookDeliveryAttempted, type WebhookEvent, type WebhookMessagesResent } from '../../src/domain/webhooks/webhook.events.js';

export interface WebhookDoc {
  id: number;
  account_id: string;
  event_type: WebhookEventType;
  url: string;
  is_active: boolean;
  deleted: boolean;
  consecutive_failures: number;
  /** The last attempt's time (live or test), ISO 8601; null before the first. */
  last_fired_at: string | null;
  created_at: string;
  /** Internal: the message ids with a `webhook_retries` document, so a deletion or deactivation can drop them. */
  owed: string[];
  /**
   * Internal: the revision, in the webhook's stream, of the last event that wrote this document.
   * An event handed again (a commit cut short by a kill on a store without transactions: this
   * document is written last, the checkpoint not at all) changes nothing twice, so a failed attempt
   * counts once in `consecutive_failures`.
   */
  revision: number;
}

export const webhooks = defineCollection<WebhookDoc>({
  name: 'webhooks',
  key: (w) => String(w.id),
  fields: ['id', 'account_id', 'deleted', 'event_type', 'is_active'],
  // An account's webhooks in id order; the active webhooks of an event type (the dispatcher).
  indexes: [
    ['account_id', 'deleted', 'id'],
    ['event_type', 'is_active'],
  ],
});

/** One delivery attempt, live or test: the attempt's own fields, its account, and when it was made. */
export type WebhookDeliveryDoc = Omit<WebhookDeliveryAttempted['data'], 'next_attempt_at' | 'at' | 'envelope'> & { account_id: string; created_at: string };

export const webhookDeliveries = defineCollection<WebhookDeliveryDoc>({
  name: 'webhook_deliveries',
  key: (d) => `${d.message_id}|${d.attempt}`,
  fields: ['webhook_id', 'created_at', 'account_id'],
  // The latest attempts of a webhook, newest first.
  indexes: [['webhook_id', 'created_at']],
});

/**
 * A message still owed: queued (or resent) and not attempted yet (due at once, so a crash between
 * the queueing and the first attempt loses nothing) or failed with a next attempt due. Removed
 * when delivered, given up, or when its webhook is deactivated or deleted.
 */
export interface WebhookRetryDoc {
  message_id: string;
  webhook_id: number;
  account_id: string;
  /** Attempts made so far, a resent message's earlier ones included. */
  attempts: number;
  next_attempt_at: string;
}

export const webhookRetries = defineCollection<WebhookRetryDoc>({
  name: 'webhook_retries',
  key: (r) => r.message_id,
  fields: ['next_attempt_at', 'webhook_id'],
  indexes: [['next_attempt_at'], ['webhook_id']],
});

const STREAM = new RegExp(`^${WEBHOOK_STREAM_PREFIX}(\\d+)$`);
const idOf = (streamId: string): number | null => {
  const m = STREAM.exec(streamId);
  return m ? Number(m[1]) : null;
};

function dropOwed(ctx: ProjectionContext, doc: WebhookDoc): WebhookDoc {
  for (const messageId of doc.owed) ctx.delete(webhookRetries, messageId);
  return { ...doc, owed: [] };
}

/** Messages resent are owed again, due at once (a deleted or deactivated webhook is owed nothing). */
function applyResent(ctx: ProjectionContext, doc: WebhookDoc, d: WebhookMessagesResent['data']): void {
  if (doc.deleted || !doc.is_active) return;
  for (const m of d.messages) ctx.upsert(webhookRetries, { message_id: m.message_id, webhook_id: doc.id, account_id: doc.account_id, attempts: m.attempts_before, next_attempt_at: d.at });
  const owed = [...doc.owed, ...d.messages.map((m) => m.message_id).filter((m) => !doc.owed.includes(m))];
  ctx.upsert(webhooks, { ...doc, owed });
}

/** An attempt: listed; a message owed is due again at its next attempt, or no longer owed. */
function applyAttempt(ctx: ProjectionContext, doc: WebhookDoc, d: WebhookDeliveryAttempted['data']): void {
  const { id, account_id } = doc;
  const { message_id, kind, event_type, event_count, attempt, ok, status_code, error } = d;
  ctx.upsert(webhookDeliveries, { webhook_id: id, account_id, message_id, kind, event_type, event_count, attempt, ok, status_code, error, created_at: d.at });
  let owed = doc.owed;
  if (owed.includes(message_id)) {
    if (d.next_attempt_at === null) {
      ctx.delete(webhookRetries, message_id);
      owed = owed.filter((m) => m !== message_id);
    } else {
      ctx.upsert(webhookRetries, { message_id, webhook_id: id, account_id, attempts: attempt, next_attempt_at: d.next_attempt_at });
    }
  }
  ctx.upsert(webhooks, { ...doc, owed, last_fired_at: d.at, consecutive_failures: ok ? 0 : doc.consecutive_failures + 1 });
}

export const webhooksProjection: Projection = {
  // v2: each webhook's revision (the documents changed shape: rebuilt from the log).
  name: 'webhooks-v2',
  collections: [webhooks, webhookDeliveries, webhookRetries],
  eventTypes: ['WebhookRegistered', 'WebhookDeleted', 'WebhookMessageQueued', 'WebhookMessagesResent', 'WebhookDeliveryAttempted', 'WebhookDeactivated', 'WebhookReactivated'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const id = idOf(raw.streamId);
    if (id === null || raw.data === null || typeof raw.data !== 'object') return;
    const event = raw as unknown as WebhookEvent;
    if (event.type === 'WebhookRegistered') {
      const d = event.data;
      if (await ctx.get(webhooks, String(id))) return;
      ctx.upsert(webhooks, {
        id,
        account_id: d.account_id,
        event_type: d.event_type,
        url: d.url,
        is_active: true,
        deleted: false,
        consecutive_failures: 0,
        last_fired_at: null,
        created_at: d.at,
        owed: [],
        revision: raw.revision,
      });
      return;
    }
    const found = await ctx.get(webhooks, String(id));
    if (!found || raw.revision <= found.revision) return;
    const doc = { ...found, revision: raw.revision };
    switch (event.type) {
      case 'WebhookDeleted':
        ctx.upsert(webhooks, { ...dropOwed(ctx, doc), deleted: true, is_active: false });
        return;
      case 'WebhookDeactivated':
        ctx.upsert(webhooks, { ...dropOwed(ctx, doc), is_active: false });
        return;
      case 'WebhookReactivated':
        ctx.upsert(webhooks, { ...doc, is_active: true, consecutive_failures: 0 });
        return;
      case 'WebhookMessageQueued': {
        const d = event.data;
        if (doc.deleted || doc.owed.includes(d.message_id)) return;
        ctx.upsert(webhookRetries, { message_id: d.message_id, webhook_id: id, account_id: doc.account_id, attempts: 0, next_attempt_at: d.at });
        ctx.upsert(webhooks, { ...doc, owed: [...doc.owed, d.message_id] });
        return;
      }
      case 'WebhookMessagesResent':
        applyResent(ctx, doc, event.data);
        return;
      case 'WebhookDeliveryAttempted':
        applyAttempt(ctx, doc, event.data);
        return;
      // Not read (not in eventTypes): secrets never reach a read model.
      case 'WebhookSecretRotated':
        return;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
