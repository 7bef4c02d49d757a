import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import type { LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { bucketKey, rowAt, scoreHistory, type HistoryBucket, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { daysUpTo, pad2 } from '../../projections/shared/columns.js';

/**
 * A ticker's score as of `asOf`, given its latest row: that row when it is on or before `asOf`,
 * else the newest history row at or before it (the delayed view); null when it has none that early.
 * GET /v1/scores/{ticker} and the theme aggregates both read a score this way, so they always
 * show the same row.
 */
export async function scoreOnOrBefore(reads: ReadStore, latest: LatestScore, asOf: string): Promise<LatestScore | null> {
  if (latest.date <= asOf) return latest;
  const row = await historyRowOnOrBefore(reads, latest, asOf);
  if (!row) return null;
  const { version: _version, ...score } = row;
  return score;
}

/**
 * The ticker's newest history row on or before `date` (before its latest row), read by bucket id:
 * the bucket of `date`'s month, else the one of the month before. Not a `find` of the buckets with
 * `month $lte`, sorted, limit 2: FerretDB 1.x pushes neither a filter on two fields nor a sort down
 * to PostgreSQL, and decoded the whole collection for every free key's score call (seconds, docs/scaling.md).
 */
async function historyRowOnOrBefore(reads: ReadStore, latest: LatestScore, date: string): Promise<HistoryRow | null> {
  const month = date.slice(0, 7);
  const current = await reads.get(scoreHistory, bucketKey(latest.ticker, month));
  const row = current && lastRowUpTo(current, date);
  if (row) return row;
  const previous = await reads.get(scoreHistory, bucketKey(latest.ticker, monthBefore(month)));
  return (previous && lastRowUpTo(previous, date)) ?? olderRow(reads, latest, date);
}

/**
 * Rare: nothing on or before `date` in its month nor the month before (a ticker first scored
 * later, or not scored for a month or more). The ticker's buckets newest first, by an equality on
 * the ticker alone (which FerretDB does leave to PostgreSQL): a page holds every bucket from
 * `date`'s month to the latest row's and the next older one, so one page answers unless the
 * latest row and the history are projected apart.
 */
async function olderRow(reads: ReadStore, latest: LatestScore, date: string): Promise<HistoryRow | null> {
  const limit = monthsApart(date.slice(0, 7), latest.date.slice(0, 7)) + 2;
  let cursor: string | null = null;
  do {
    const page: Page<HistoryBucket> = await reads.find(scoreHistory, { ticker: latest.ticker }, { sort: [['month', -1]], limit, cursor });
    for (const bucket of page.items) {
      const row = lastRowUpTo(bucket, date);
      if (row) return row;
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return null;
}

/** The bucket's last row on or before `date`, or null. */
function lastRowUpTo(b: HistoryBucket, date: string): HistoryRow | null {
  const month = date.slice(0, 7);
  if (b.month > month) return null;
  const n = b.month < month ? b.days.length : daysUpTo(b.days, Number(date.slice(8, 10)));
  return n > 0 ? rowAt(b, n - 1) : null;
}

/** `YYYY-MM` of the month before. */
function monthBefore(month: string): string {
  const year = Number(month.slice(0, 4));
  const m = Number(month.slice(5, 7));
  return m === 1 ? `${year - 1}-12` : `${month.slice(0, 4)}-${pad2(m - 1)}`;
}

function monthsApart(from: string, to: string): number {
  return (Number(to.slice(0, 4)) - Number(from.slice(0, 4))) * 12 + Number(to.slice(5, 7)) - Number(from.slice(5, 7));
}
