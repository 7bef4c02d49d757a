import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection, type ReadStore } from '../../src/core/read-store.port.js';
import type { ScoreEvent, ScoreValues } from '../../src/domain/scores/score.events.js';
import { gapOf, type ScoreFields, type ScoreRow } from '../shared/score-row.js';
import { BatchBuckets, daysUpTo, holds, insertAt, packScore, pad2, scoreAt, type ScoreColumns } from '../shared/columns.js';

/** A row as queries see it: the current value of one ticker on one date. */
export interface HistoryRow extends ScoreRow {
  /** 1 for the first publication, +1 per restatement. */
  version: number;
  /**
   * The write sequence of the score event that last wrote the row (see `ScoreHistoryHead`): what
   * the multi-ticker history's sync cursor (`next_since`) compares.
   */
  seq: number;
}

/**
 * One ticker's rows of one calendar month. Daily rows are kept in month buckets so that a batch
 * of events rewrites each bucket once instead of writing every row: this is what makes a full
 * rebuild of 1M+ rows take seconds. `written_at` (the latest `restated_at` inside) lets
 * incremental sync (`since`) skip every bucket that nothing touched since.
 *
 * Stored column-wise (see ../columns.ts: a full rebuild writes over a million rows, and per-row
 * field names or tuples would be most of the bytes and of the serialisation time): the arrays are
 * indexed like `days`, the scores are score columns. The publication and restatement instants are
 * kept only where they say something: most rows are published at the standard time and never
 * restated. Read through `rowAt`.
 */
export interface HistoryBucket extends ScoreColumns {
  ticker: string;
  /** YYYY-MM */
  month: string;
  written_at: string;
  /** The highest `seq` inside: the sync cursor skips every bucket nothing wrote since its position. */
  written_seq: number;
  /** The rows' days of the month, ascending. */
  days: number[];
  /** By row: the `seq` of the score event that last wrote it. */
  seq: number[];
  /** By day: `published_at` of the rows not first published at the standard time (22:00 UTC of their date). */
  published: Record<string, string>;
  /** By day: [restated_at, version] of the restated rows (the others are version 1, restated_at = published_at). */
  restated: Record<string, [restated_at: string, version: number]>;
}

/** A day's scores are published at 22:00 UTC: a row first published then stores no instant. */
const STANDARD_PUBLICATION = 'T22:00:00.000Z';

/** The date of the bucket's row `i`. */
export const dateAt = (b: HistoryBucket, i: number) => `${b.month}-${pad2(b.days[i]!)}`;
const publishedAt = (b: HistoryBucket, i: number) => b.published[b.days[i]!] ?? `${dateAt(b, i)}${STANDARD_PUBLICATION}`;
/** When the bucket's row `i` was last written. */
export const restatedAt = (b: HistoryBucket, i: number) => b.restated[b.days[i]!]?.[0] ?? publishedAt(b, i);

/** The bucket's row `i`. */
export function rowAt(b: HistoryBucket, i: number): HistoryRow {
  const restated = b.restated[b.days[i]!];
  const published = publishedAt(b, i);
  const scores = { main_street: scoreAt(b.main_street, i), wall_street: scoreAt(b.wall_street, i) };
  // One literal, not a spread with more properties (why: withChanges in
  // src/domain/ledger/ledger.state.ts): this runs for every row a history query returns.
  return {
    ticker: b.ticker,
    date: dateAt(b, i),
    main_street: scores.main_street,
    wall_street: scores.wall_street,
    service_score: scoreAt(b.service_score, i),
    estimated: b.estimated[i] === 1,
    version: restated?.[1] ?? 1,
    published_at: published,
    restated_at: restated?.[0] ?? published,
    seq: b.seq[i]!,
    divergence_gap: gapOf(scores),
  };
}

/**
 * A superseded value: it was current from `valid_from` (inclusive) to `valid_to` (exclusive).
 * The current value of a row is in its bucket, current from `restated_at` on; together they are
 * every published value of the row with the interval in which it was current.
 */
export interface ScoreVersion extends Omit<ScoreFields, 'divergence_gap'> {
  version: number;
  valid_from: string;
  valid_to: string;
  /** The write sequence of the event that wrote this value (see `ScoreHistoryHead`). */
  seq: number;
}

/**
 * The score events applied so far, counted: the n-th score event of the log (in log order) has
 * write sequence n, and every row and version records the sequence of the event that wrote it.
 * The multi-ticker history reads this document first, then the rows: a row with a sequence up to
 * the one read was committed with or before it (the document is written last of its batch, in
 * the batch's commit), so `rows with seq in (cursor, head]` is exactly what was written between
 * two polls. A count, not the log position: small numbers in every row, and the same on a
 * rebuild, since the log's order does not change.
 */
export interface ScoreHistoryHead {
  id: 'head';
  /** Score events applied (the last one's write sequence); 0 before the first. */
  seq: number;
  /** Log position of the last score event applied: an event at or before it was applied already. */
  position: string;
}

export const bucketKey = (ticker: string, month: string) => `${ticker}|${month}`;

export const scoreHistory = defineCollection<HistoryBucket>({
  name: 'score_history',
  key: (b) => bucketKey(b.ticker, b.month),
  fields: ['ticker', 'month', 'written_at', 'written_seq'],
  indexes: [['ticker', 'month'], ['written_at'], ['written_seq']],
});

export const scoreHistoryHead = defineCollection<ScoreHistoryHead>({
  name: 'score_history_head',
  key: (h) => h.id,
  fields: [],
  indexes: [],
});

/** The write sequence of the last score event the read model holds (0 before the first). */
export async function scoreHistorySeq(reads: Pick<ReadStore, 'get'>): Promise<number> {
  return (await reads.get(scoreHistoryHead, 'head'))?.seq ?? 0;
}

export const scoreVersions = defineCollection<ScoreVersion>({
  name: 'score_versions',
  key: (v) => `${v.ticker}|${v.date}|${String(v.version).padStart(4, '0')}`,
  fields: ['ticker', 'date', 'valid_from', 'valid_to'],
  indexes: [['ticker', 'date'], ['valid_to']],
});

/** The rows of buckets between two dates (inclusive), oldest first. */
export function rowsBetween(buckets: HistoryBucket[], start?: string, end?: string): HistoryRow[] {
  const out: HistoryRow[] = [];
  for (const b of [...buckets].sort((x, y) => (x.month < y.month ? -1 : x.month > y.month ? 1 : 0))) {
    for (let i = 0; i < b.days.length; i++) {
      const date = dateAt(b, i);
      if ((start && date < start) || (end && date > end)) continue;
      out.push(rowAt(b, i));
    }
  }
  return out;
}

/**
 * A ticker's latest row on or before `date`, or null. Two month buckets: the month of `date` may
 * hold only later days (an as-of date early in a month), and then the month before holds the row.
 */
export async function rowOnOrBefore(reads: Pick<ReadStore, 'find'>, ticker: string, date: string): Promise<HistoryRow | null> {
  const page = await reads.find(scoreHistory, { ticker, month: { $lte: date.slice(0, 7) } }, { sort: [['month', -1]], limit: 2 });
  return rowsBetween(page.items, undefined, date).at(-1) ?? null;
}

/** Score history with `restated_at`, and the point-in-time versions behind it. */
export const scoreHistoryProjection: Projection = {
  // v4: each row's write sequence (the sync cursor). v3: a second restatement at the same instant
  // is applied. A new name rebuilds the read models of an existing store.
  name: 'score-history-v4',
  collections: [scoreHistory, scoreVersions, scoreHistoryHead],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  apply(event: RecordedEvent, ctx: ProjectionContext) {
    return applyScores([event], ctx);
  },
  applyBatch: applyScores,
};

/** Applies score events in order; each bucket they change is loaded and written once. */
async function applyScores(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  const history = new BatchBuckets(ctx, scoreHistory, bucketKey);
  const head = (await ctx.get(scoreHistoryHead, 'head')) ?? { id: 'head', seq: 0, position: '' };
  const applied = head.seq;
  for (const raw of events) {
    // Applied before: its rows already hold what it wrote, and its sequence is counted.
    if (raw.position <= head.position) continue;
    head.seq += 1;
    head.position = raw.position;
    await applyEvent(ctx, history, raw as unknown as ScoreEvent, head.seq);
  }
  history.flush();
  // After the buckets: a store that applies a commit's writes in order (MongoDB without a
  // transaction) never shows this sequence before the rows it counts.
  if (head.seq !== applied) ctx.upsert(scoreHistoryHead, head);
}

/** What a score event writes into each of its rows: when, and under which write sequence. */
interface RowWrite {
  date: string;
  /** The day of the month of `date`. */
  day: number;
  /** The event's publication or restatement instant. */
  at: string;
  seq: number;
}

/** Writes one score event's rows into their month buckets (loaded through `history`). */
async function applyEvent(ctx: ProjectionContext, history: BatchBuckets<HistoryBucket>, event: ScoreEvent, seq: number): Promise<void> {
  const { date, rows } = event.data;
  const month = date.slice(0, 7);
  const w: RowWrite = { date, day: Number(date.slice(8, 10)), at: event.type === 'ScoresPublished' ? event.data.published_at : event.data.restated_at, seq };
  const buckets = await history.load(month, rows);
  const standard = w.at === `${date}${STANDARD_PUBLICATION}`;
  for (let r = 0; r < rows.length; r++) {
    const v = rows[r]!;
    const slot = buckets.get(v.ticker)!;
    const b = (slot.doc ??= emptyBucket(v.ticker, month));
    const n = daysUpTo(b.days, w.day);
    const found = n > 0 && b.days[n - 1] === w.day;
    const i = found ? n - 1 : n;
    if (found) {
      // Applied before (perhaps restated since): a publication leaves it as it is.
      if (event.type === 'ScoresPublished') continue;
      if (!restateRow(ctx, b, i, v, w)) continue;
    } else {
      insertRow(b, i, v, w, standard);
    }
    if (w.at > b.written_at) b.written_at = w.at;
    b.written_seq = seq;
    slot.changed = true;
  }
}

function emptyBucket(ticker: string, month: string): HistoryBucket {
  return {
    ticker,
    month,
    written_at: '',
    written_seq: 0,
    days: [],
    seq: [],
    main_street: [],
    wall_street: [],
    service_score: [],
    estimated: [],
    published: {},
    restated: {},
  };
}

/**
 * Restates the bucket's row `i` with `v`, keeping the value it replaces as a version; false (and
 * nothing written) when the row already holds a later or the same restatement.
 */
function restateRow(ctx: ProjectionContext, b: HistoryBucket, i: number, v: ScoreValues, w: RowWrite): boolean {
  const prev = rowAt(b, i);
  // An older restatement, or this one applied before. Two restatements at one instant (a
  // pinned clock, two ingests in one millisecond) differ by their values: the later one wins.
  if (prev.restated_at > w.at || (prev.restated_at === w.at && holds(b, i, v))) return false;
  ctx.upsert(scoreVersions, {
    ticker: v.ticker,
    date: w.date,
    version: prev.version,
    main_street: prev.main_street,
    wall_street: prev.wall_street,
    service_score: prev.service_score,
    estimated: prev.estimated,
    valid_from: prev.restated_at,
    valid_to: w.at,
    seq: prev.seq,
  });
  b.restated[w.day] = [w.at, prev.version + 1];
  b.main_street[i] = packScore(v.main_street);
  b.wall_street[i] = packScore(v.wall_street);
  b.service_score[i] = packScore(v.service_score);
  b.estimated[i] = v.estimated ? 1 : 0;
  b.seq[i] = w.seq;
  return true;
}

/** A new row at index `i` (a restatement of a row never published is its first publication). */
function insertRow(b: HistoryBucket, i: number, v: ScoreValues, w: RowWrite, standard: boolean): void {
  insertAt(b.days, i, w.day);
  insertAt(b.main_street, i, packScore(v.main_street));
  insertAt(b.wall_street, i, packScore(v.wall_street));
  insertAt(b.service_score, i, packScore(v.service_score));
  insertAt(b.estimated, i, v.estimated ? 1 : 0);
  insertAt(b.seq, i, w.seq);
  if (!standard) b.published[w.day] = w.at;
}
