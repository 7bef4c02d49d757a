/**
 * What a run of the log publishes to webhooks, planned without I/O (docs/webhooks.md, "Live
 * deliveries"). The decision loop (`decision-loop.ts`) reads the read models these need and
 * turns the plan into `QueueMessage` commands.
 */
import { createHash } from 'node:crypto';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { liveEnvelope, type WebhookEnvelope, type WebhookEvent, type WebhookEventType } from '../../src/domain/webhooks/webhook-envelope.js';
import type { ScoreEvent } from '../../src/domain/scores/score.events.js';

/** What a run of events published: the rows that may be score moves, the dates whose extremes may open. */
export interface Publications {
  /** Each (ticker, date) published or restated, once, in log order. */
  rows: { ticker: string; date: string }[];
  /** Dates with a `ScoresPublished` (a first publication, or new tickers of a date), once, in log order. */
  published_dates: string[];
}

/** The score rows and publication dates of `events` (other events are ignored). */
/** The events whose data `publicationsOf` reads (a follower of the log reads no other's: ReadModelFollower). */
export const PUBLICATION_EVENT_TYPES = ['ScoresPublished', 'ScoresRestated'] as const;

export function publicationsOf(events: readonly RecordedEvent[]): Publications {
  const seen = new Set<string>();
  const rows: Publications['rows'] = [];
  const dates = new Set<string>();
  for (const raw of events) {
    if (raw.type !== 'ScoresPublished' && raw.type !== 'ScoresRestated') continue;
    const event = raw as unknown as ScoreEvent;
    const { date } = event.data;
    if (event.type === 'ScoresPublished') dates.add(date);
    for (const r of event.data.rows) {
      const key = `${r.ticker}|${date}`;
      if (seen.has(key)) continue;
      seen.add(key);
      rows.push({ ticker: r.ticker, date });
    }
  }
  return { rows, published_dates: [...dates] };
}

export const isEmpty = (p: Publications): boolean => p.rows.length === 0 && p.published_dates.length === 0;

/**
 * The message id of the live message for `webhookId` decided on the run of events ending at
 * `position`: the same on every decision of that run, so a run decided again (after a crash)
 * queues nothing twice (the delivery decider refuses an id it queued before). Shaped like the
 * ids port's `msg_` ids: 16 bytes, base64url.
 */
export function dispatchMessageId(webhookId: number, position: string): string {
  return `msg_${createHash('sha256').update(`webhook-dispatch|${webhookId}|${position}`).digest().subarray(0, 16).toString('base64url')}`;
}

export interface PlannedMessage {
  webhook_id: number;
  message_id: string;
  envelope: WebhookEnvelope;
}

/**
 * One message per webhook for the run ending at `position`, carrying every event of the
 * webhook's type (none for a type without events). `events` in the order they are to be sent.
 */
export function planMessages(
  webhooks: readonly { id: number; event_type: WebhookEventType }[],
  events: { [T in WebhookEventType]: readonly Extract<WebhookEvent, { type: T }>[] },
  position: string,
  now: Date,
): PlannedMessage[] {
  const out: PlannedMessage[] = [];
  for (const w of webhooks) {
    const of = events[w.event_type];
    if (of.length === 0) continue;
    out.push({ webhook_id: w.id, message_id: dispatchMessageId(w.id, position), envelope: liveEnvelope(of, now) });
  }
  return out;
}
