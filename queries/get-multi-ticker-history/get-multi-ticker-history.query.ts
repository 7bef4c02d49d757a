import { AppError } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { dailyScores } from '../../projections/daily-scores/daily-scores.projection.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import { dateAt, restatedAt, rowAt, scoreHistory, type HistoryBucket, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { rowsAsKnownAt } from '../shared/point-in-time.js';
import { requireVisibleTickers } from '../shared/tickers.js';
import { clampWindow, type Visibility } from '../shared/visibility.js';

/**
 * Most rows one call returns. The spec sets no limit, but the whole universe over the whole
 * history is about a million rows (over 150 MB of JSON). 200,000 keeps the spec's largest
 * explicit request, 50 tickers over the full history, inside one call for years to come
 * (about 2,000 trading days per ticker in 2026), while bounding the memory and time of a call.
 * A broader query is refused with 422 `limit_exceeded` and charged nothing; it can be split by
 * tickers or dates, and an incremental sync (`since`) returns only what changed.
 */
export const MAX_ROWS_PER_CALL = 200_000;

/**
 * Up to this many month buckets written since `since`, the buckets are found through the
 * `written_at` index in one read (the incremental-sync path). Beyond it (an old `since`), reading
 * by ticker and month is cheaper.
 */
const SINCE_INDEX_MAX_BUCKETS = 5_000;
/** Tickers per read on the ticker-and-month path: about 2,000 month buckets at most per read. */
const TICKERS_PER_READ = 20;

export interface MultiHistoryRequest {
  /** Upper-cased, deduplicated; null = everything the caller can see. */
  tickers: string[] | null;
  /** Inclusive; clamped to the caller's history floor. */
  start?: string;
  /** Inclusive; clamped to the caller's as-of date. */
  end?: string;
  /** ISO instant: only rows written (first published or restated) at or after it. */
  since?: string;
  /** ISO instant: every row as it was published at that instant. */
  asKnownAt?: string;
}

export interface MultiHistoryResult {
  /** Ordered by ticker, then date. */
  rows: HistoryRow[];
  /** Effective start (clamped; the first score date when the tier has the full history and none was asked). */
  start: string | null;
  /** Effective end (clamped to as_of; null before any visible scores). */
  end: string | null;
}

/**
 * Score rows of many tickers (spec: GET /v1/scores/history). With `since`, the month buckets
 * nothing touched since that instant are skipped through the `written_at` index, so a sync of
 * the day's changes over the full history reads only the buckets that changed.
 */
export async function getMultiTickerHistory(
  reads: ReadStore,
  v: Visibility,
  req: MultiHistoryRequest,
  maxRows: number = MAX_ROWS_PER_CALL,
): Promise<MultiHistoryResult> {
  if (req.tickers) await requireVisibleTickers(reads, v, req.tickers);
  const w = clampWindow(v, req.start, req.end);
  const start = w.start ?? (await firstScoreDate(reads));
  const end = w.end;
  if (end === null || start === null || start > end) return { rows: [], start, end };

  const wanted: ReadonlySet<string> | null = req.tickers ? new Set(req.tickers) : v.universe;
  const startMonth = start.slice(0, 7);
  const endMonth = end.slice(0, 7);
  const since = req.since;
  const bucketWanted = (b: HistoryBucket) =>
    b.month >= startMonth && b.month <= endMonth && (wanted === null || wanted.has(b.ticker)) && (since === undefined || b.written_at >= since);

  const rows: HistoryRow[] = [];
  const take = async (buckets: HistoryBucket[]) => {
    let chunk: HistoryRow[] = [];
    // Buckets arrive ordered by ticker then month.
    for (const b of buckets) if (bucketWanted(b)) rowsOf(b, start, end, since, chunk);
    if (req.asKnownAt !== undefined) chunk = await rowsAsKnownAt(reads, chunk, req.asKnownAt);
    for (const r of chunk) {
      if (since !== undefined && r.restated_at < since) continue;
      rows.push(r);
    }
    if (rows.length > maxRows) {
      throw new AppError(
        'limit_exceeded',
        `this query returns more than ${maxRows.toLocaleString('en-US')} rows, the most one call returns: narrow it with tickers or start and end, or sync changes with since`,
        { max_rows: maxRows },
      );
    }
  };

  if (since !== undefined && (await reads.count(scoreHistory, { written_at: { $gte: since } })) <= SINCE_INDEX_MAX_BUCKETS) {
    // Sorted on the filtered field, so the store walks the written_at index (sorting by ticker
    // instead lets SQLite's planner prefer a full scan in ticker order); ordered here after.
    const page = await reads.find(scoreHistory, { written_at: { $gte: since } }, { sort: [['written_at', 1]] });
    await take(page.items.sort(byTickerThenMonth));
    return { rows, start, end };
  }

  const symbols = [...(req.tickers ?? (wanted ? wanted : await allScoredTickers(reads)))].sort();
  for (let i = 0; i < symbols.length; i += TICKERS_PER_READ) {
    const page = await reads.find(
      scoreHistory,
      { ticker: { $in: symbols.slice(i, i + TICKERS_PER_READ) }, month: { $gte: startMonth, $lte: endMonth } },
      { sort: [['ticker', 1], ['month', 1]] },
    );
    await take(page.items);
    // A large answer is built in slices: let other requests run in between.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { rows, start, end };
}

/**
 * Appends a bucket's rows dated start..end, oldest first. With `since`, a row last written before
 * it is skipped before it is unpacked into a HistoryRow: under as_known_at too, since a version's
 * `restated_at` is never later than the row's current one.
 */
function rowsOf(b: HistoryBucket, start: string, end: string, since: string | undefined, out: HistoryRow[]): void {
  for (let i = 0; i < b.days.length; i++) {
    const date = dateAt(b, i);
    if (date < start || date > end) continue;
    if (since !== undefined && restatedAt(b, i) < since) continue;
    out.push(rowAt(b, i));
  }
}

function byTickerThenMonth(a: HistoryBucket, b: HistoryBucket): number {
  if (a.ticker !== b.ticker) return a.ticker < b.ticker ? -1 : 1;
  return a.month < b.month ? -1 : a.month > b.month ? 1 : 0;
}

async function allScoredTickers(reads: ReadStore): Promise<string[]> {
  const page = await reads.find(latestScores, {});
  return page.items.map((s) => s.ticker);
}

/** The first date with scores (the start of a tier with the full history). */
async function firstScoreDate(reads: ReadStore): Promise<string | null> {
  // The always-true range makes the store walk the date index (unfiltered, SQLite's planner scans
  // and sorts the whole table of cross-sections).
  const page = await reads.find(dailyScores, { date: { $gte: '0000-01-01' } }, { sort: [['date', 1]], limit: 1 });
  return page.items[0]?.date ?? null;
}
