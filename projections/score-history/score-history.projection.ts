import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ScoreEvent, ScoreValues } from '../../src/events/score-events.js';
import { round1 } from '../../src/domain/composite.js';

/** The current value of one ticker on one date. */
export interface RowValues {
  main_street: number;
  wall_street: number;
  service_score: number;
  estimated: boolean;
  /** ISO instant of first publication. */
  published_at: string;
  /** ISO instant the row was last written (= published_at until restated). */
  restated_at: string;
  /** 1 for the first publication, +1 per restatement. */
  version: number;
}

/**
 * The same, packed as stored inside a month bucket: a full rebuild writes over a million of
 * them, and field names would be most of the bytes. `restated_at` is null while it equals
 * `published_at`. Written by `stored`, read only through `unpack`.
 */
export type StoredRow = [
  main_street: number,
  wall_street: number,
  service_score: number,
  estimated: 0 | 1,
  version: number,
  published_at: string,
  restated_at: string | null,
];

export function unpack(s: StoredRow): RowValues {
  return {
    main_street: s[0],
    wall_street: s[1],
    service_score: s[2],
    estimated: s[3] === 1,
    version: s[4],
    published_at: s[5],
    restated_at: s[6] ?? s[5],
  };
}

/** A row as queries see it. */
export interface HistoryRow extends RowValues {
  ticker: string;
  date: string;
  divergence_gap: number | null;
}

/**
 * One ticker's rows of one calendar month. Daily rows are kept in month buckets so that a batch
 * of events rewrites each bucket once instead of writing every row: this is what makes a full
 * rebuild of 1M+ rows take seconds. `written_at` (the latest `restated_at` inside) lets
 * incremental sync (`since`) skip every bucket that nothing touched since.
 */
export interface HistoryBucket {
  ticker: string;
  /** YYYY-MM */
  month: string;
  written_at: string;
  rows: Record<string, StoredRow>;
}

/**
 * A superseded value: it was current from `valid_from` (inclusive) to `valid_to` (exclusive).
 * The current value of a row is in its bucket, current from `restated_at` on; together they are
 * every published value of the row with the interval in which it was current.
 */
export interface ScoreVersion {
  ticker: string;
  date: string;
  version: number;
  main_street: number;
  wall_street: number;
  service_score: number;
  estimated: boolean;
  valid_from: string;
  valid_to: string;
}

export const bucketKey = (ticker: string, month: string) => `${ticker}|${month}`;

export const scoreHistory = defineCollection<HistoryBucket>({
  name: 'score_history',
  key: (b) => bucketKey(b.ticker, b.month),
  fields: ['ticker', 'month', 'written_at'],
  indexes: [['ticker', 'month'], ['month'], ['written_at']],
});

export const scoreVersions = defineCollection<ScoreVersion>({
  name: 'score_versions',
  key: (v) => `${v.ticker}|${v.date}|${String(v.version).padStart(4, '0')}`,
  fields: ['ticker', 'date', 'valid_from', 'valid_to'],
  indexes: [['ticker', 'date'], ['valid_to']],
});

export function gapOf(v: { main_street: number; wall_street: number }): number | null {
  if (v.main_street == null || v.wall_street == null) return null;
  return round1(v.main_street - v.wall_street);
}

export function toHistoryRow(ticker: string, date: string, s: StoredRow): HistoryRow {
  const r = unpack(s);
  return { ticker, date, ...r, divergence_gap: gapOf(r) };
}

/** The rows of buckets between two dates (inclusive), oldest first. */
export function rowsBetween(buckets: HistoryBucket[], start?: string, end?: string): HistoryRow[] {
  const out: HistoryRow[] = [];
  for (const b of [...buckets].sort((x, y) => (x.month < y.month ? -1 : x.month > y.month ? 1 : 0))) {
    for (const date of Object.keys(b.rows).sort()) {
      if ((start && date < start) || (end && date > end)) continue;
      out.push(toHistoryRow(b.ticker, date, b.rows[date]!));
    }
  }
  return out;
}

function stored(v: ScoreValues, publishedAt: string, restatedAt: string, version: number): StoredRow {
  return [v.main_street, v.wall_street, v.service_score, v.estimated ? 1 : 0, version, publishedAt, restatedAt === publishedAt ? null : restatedAt];
}

/** Score history with `restated_at`, and the point-in-time versions behind it. */
export const scoreHistoryProjection: Projection = {
  name: 'score-history',
  collections: [scoreHistory, scoreVersions],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ScoreEvent;
    const { date, rows } = event.data;
    const month = date.slice(0, 7);
    const buckets = await ctx.getMany(
      scoreHistory,
      rows.map((v) => bucketKey(v.ticker, month)),
    );
    const bucketOf = (ticker: string): HistoryBucket => {
      const key = bucketKey(ticker, month);
      let b = buckets.get(key);
      if (!b) buckets.set(key, (b = { ticker, month, written_at: '', rows: {} }));
      return b;
    };
    const touched = new Set<HistoryBucket>();
    switch (event.type) {
      case 'ScoresPublished': {
        const at = event.data.published_at;
        for (const v of rows) {
          const b = bucketOf(v.ticker);
          // Applied before (perhaps restated since): leave it as it is.
          if (b.rows[date]) continue;
          b.rows[date] = stored(v, at, at, 1);
          if (at > b.written_at) b.written_at = at;
          touched.add(b);
        }
        break;
      }
      case 'ScoresRestated': {
        const at = event.data.restated_at;
        for (const v of rows) {
          const b = bucketOf(v.ticker);
          const packed = b.rows[date];
          const prev = packed ? unpack(packed) : null;
          if (prev && prev.restated_at >= at) continue; // already applied
          if (prev) {
            ctx.upsert(scoreVersions, {
              ticker: v.ticker,
              date,
              version: prev.version,
              main_street: prev.main_street,
              wall_street: prev.wall_street,
              service_score: prev.service_score,
              estimated: prev.estimated,
              valid_from: prev.restated_at,
              valid_to: at,
            });
          }
          b.rows[date] = stored(v, prev?.published_at ?? at, at, (prev?.version ?? 0) + 1);
          if (at > b.written_at) b.written_at = at;
          touched.add(b);
        }
        break;
      }
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
    for (const b of touched) ctx.upsert(scoreHistory, b);
  },
};
