import { AppError } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import { bucketKey, dateAt, restatedAt, rowAt, scoreHistory, scoreHistorySeq, type HistoryBucket, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { rowsAsKnownAt } from '../shared/point-in-time.js';
import { requireVisibleTickers, parseTickerList } from '../shared/tickers.js';
import { clampWindow, type Visibility } from '../shared/visibility.js';
import { invalidCursor, type SyncCursor, type SyncPoint, decodeSyncCursor, encodeSyncCursor, isSyncCursor } from './sync-cursor.js';
import { scoreFieldsOf, type ScoreFields } from '../../projections/shared/score-row.js';
import { requireInnerMonthsWithin, UNBOUNDED, type RowBudget } from '../shared/history-budget.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseDateParam } from '../shared/params.js';
import { citationUrl } from '../shared/provenance.js';
import { parseInstantParam } from '../shared/instants.js';
import { timestampOf } from '../../src/web/timestamp.js';

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
 * Up to this many month buckets written since `since` (or since a sync cursor), the buckets are
 * found through the `written_at` (`written_seq`) index in one read (the incremental-sync path).
 * Beyond it (an old `since`), reading by ticker and month is cheaper.
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
  /** A sync cursor (a previous answer's `next`): only what was written or entered the window after it. */
  cursor?: SyncCursor;
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
  /** Where the next call of a sync loop continues (`next_since`). */
  next: SyncCursor;
  /** A cursor's change set was larger than one call returns: `next` continues it at once. */
  more: boolean;
}

/**
 * Score rows of many tickers (spec: GET /v1/scores/history).
 *
 * Sync: the answer covers the score events up to the read model's write sequence, read first
 * (`scoreHistorySeq`): every row written up to it is committed and seen by the reads that follow,
 * a row written later (its sequence above it) is left for the next call, and `next` records that
 * sequence and the window's end. With a cursor, the rows written after its sequence and the rows
 * dated after its end (they entered the window since) are returned; a row restated twice between
 * two calls comes once, with its latest value. With `since`, the month buckets nothing touched
 * since that instant (or cursor) are skipped through the `written_at` (`written_seq`) index, so a
 * sync of the day's changes over the full history reads only the buckets that changed.
 */
export async function getMultiTickerHistory(
  reads: ReadStore,
  v: Visibility,
  req: MultiHistoryRequest,
  maxRows: number = MAX_ROWS_PER_CALL,
  budget: RowBudget = UNBOUNDED,
): Promise<MultiHistoryResult> {
  // First, before any row is read (see above).
  const head = await scoreHistorySeq(reads);
  if (req.cursor) checkCursor(req.cursor, head);
  if (req.tickers) await requireVisibleTickers(reads, v, req.tickers);
  const w = clampWindow(v, req.start, req.end);
  const start = w.start ?? (await firstScoreDate(reads));
  // While a change set is paged, its bounds stay those of its first page.
  const to = req.cursor?.page?.to ?? { seq: head, end: w.end };
  const end = w.end !== null && to.end !== null && w.end > to.end ? to.end : w.end;
  const next: SyncCursor = { from: { seq: to.seq, end } };
  if (end === null || start === null || start > end) return { rows: [], start, end, next, more: false };

  const scope = scopeOf(v, req, start, end, to, budget);
  if (!req.since && !req.cursor && req.asKnownAt === undefined) {
    await requireInnerMonthsWithin(reads, budget, req.tickers ?? (scope.wanted ? [...scope.wanted] : null), scope.startMonth, scope.endMonth);
  }
  const answer: Answer = { rows: [], next, more: false };
  const take = (buckets: HistoryBucket[]) => takeBuckets(reads, scope, answer, buckets, maxRows);
  const changed = await changedBuckets(reads, scope);
  if (changed) await take(changed);
  else await takeByTicker(reads, scope, take);
  return { rows: answer.rows, start, end, next: answer.next, more: answer.more };
}

/** 400 `cursor_invalid` for a cursor that is ahead of the data or whose pages end before they begin. */
function checkCursor(cursor: SyncCursor, head: number): void {
  const ahead = Math.max(cursor.from.seq, cursor.page?.to.seq ?? 0);
  if (ahead > head) throw invalidCursor(`it is ahead of the data served here (write ${ahead}, the latest is ${head}); was the service rebuilt from another log?`);
  if (cursor.page && cursor.page.to.seq < cursor.from.seq) throw invalidCursor('its pages end before they begin');
}

/** What one call answers: its window, its tickers, and which rows are new to the client. */
interface Scope {
  req: MultiHistoryRequest;
  start: string;
  end: string;
  startMonth: string;
  endMonth: string;
  wanted: ReadonlySet<string> | null;
  since: string | undefined;
  cursor: SyncCursor | undefined;
  /** The cursor's write sequence (-1 without one). */
  from: number;
  /** Rows dated after it entered the window since the cursor. */
  entered: string;
  page: SyncCursor['page'];
  /** The change set's upper bound. */
  to: SyncPoint;
  /** What the caller's maximum pays for: the read stops one row past it. */
  budget: RowBudget;
}

/** The rows of the answer so far, and where the next call continues. */
interface Answer {
  rows: HistoryRow[];
  next: SyncCursor;
  more: boolean;
}

function scopeOf(v: Visibility, req: MultiHistoryRequest, start: string, end: string, to: SyncPoint, budget: RowBudget): Scope {
  const cursor = req.cursor;
  return {
    req,
    start,
    end,
    startMonth: start.slice(0, 7),
    endMonth: end.slice(0, 7),
    wanted: req.tickers ? new Set(req.tickers) : v.universe,
    since: req.since,
    cursor,
    from: cursor?.from.seq ?? -1,
    // Rows dated after the cursor's end entered the window since: new to the client, whenever written.
    entered: cursor ? (cursor.from.end ?? '') : end,
    page: cursor?.page,
    to,
    budget,
  };
}

function bucketWanted(s: Scope, b: HistoryBucket): boolean {
  return (
    b.month >= s.startMonth &&
    b.month <= s.endMonth &&
    (s.wanted === null || s.wanted.has(b.ticker)) &&
    (s.since === undefined || b.written_at >= s.since) &&
    (b.written_seq > s.from || b.month >= s.entered.slice(0, 7)) &&
    (s.page === undefined || b.ticker >= s.page.ticker)
  );
}

/** On a current row; under as_known_at the version served is never newer (restated_at, seq). */
function rowWanted(s: Scope, b: HistoryBucket, i: number, date: string): boolean {
  return (
    date >= s.start &&
    date <= s.end &&
    (s.since === undefined || restatedAt(b, i) >= s.since) &&
    (b.seq[i]! > s.from || date > s.entered) &&
    // After the last row of the previous page, in the answer's order (ticker, then date).
    (s.page === undefined || b.ticker > s.page.ticker || (b.ticker === s.page.ticker && date > s.page.date))
  );
}

/** On the version served: one written after the head read is the next call's. */
function served(s: Scope, r: HistoryRow): boolean {
  return r.seq <= s.to.seq && (s.since === undefined || r.restated_at >= s.since) && (r.seq > s.from || r.date > s.entered);
}

/** Takes buckets ordered by ticker then month into the answer; false once the answer is full. */
async function takeBuckets(reads: ReadStore, s: Scope, answer: Answer, buckets: HistoryBucket[], maxRows: number): Promise<boolean> {
  let chunk: HistoryRow[] = [];
  for (const b of buckets) {
    if (!bucketWanted(s, b)) continue;
    for (let i = 0; i < b.days.length; i++) {
      const date = dateAt(b, i);
      if (rowWanted(s, b, i, date)) chunk.push(rowAt(b, i));
    }
  }
  if (s.req.asKnownAt !== undefined) chunk = await rowsAsKnownAt(reads, chunk, s.req.asKnownAt);
  const rows = answer.rows;
  for (const r of chunk) if (served(s, r)) rows.push(r);
  if (rows.length > s.budget.rows) s.budget.over();
  if (rows.length <= maxRows) return true;
  if (!s.cursor) {
    throw new AppError(
      'limit_exceeded',
      `this query returns more than ${maxRows.toLocaleString('en-US')} rows, the most one call returns: narrow it with tickers or start and end, or sync changes with since`,
      { maximum: maxRows },
    );
  }
  // A cursor's change set comes in pages: this one ends at the last row it holds.
  rows.length = maxRows;
  const last = rows[maxRows - 1]!;
  answer.next.from = s.cursor.from;
  answer.next.page = { to: { seq: s.to.seq, end: s.end }, ticker: last.ticker, date: last.date };
  answer.more = true;
  return false;
}

/**
 * The buckets written since `since` (or the cursor), and those of the dates that entered the
 * window, ordered by ticker then month, read through the `written_at` (`written_seq`) index; null
 * when nothing limits the buckets so or too many changed (then reading by ticker is cheaper).
 */
async function changedBuckets(reads: ReadStore, s: Scope): Promise<HistoryBucket[] | null> {
  const { cursor, since, end, entered, startMonth, endMonth } = s;
  const changedFilter = cursor ? { written_seq: { $gt: s.from } } : since !== undefined ? { written_at: { $gte: since } } : null;
  // The months of the dates that entered the window since the cursor: one or two as the as-of date
  // moves a day at a time; all of them after a cursor taken before anything was visible.
  const enteredFrom = cursor && end > entered ? (entered.slice(0, 7) > startMonth ? entered.slice(0, 7) : startMonth) : null;
  const fewEntered = enteredFrom === null || monthsApart(enteredFrom, endMonth) <= 1;
  if (!(changedFilter && fewEntered && (await reads.count(scoreHistory, changedFilter)) <= SINCE_INDEX_MAX_BUCKETS)) return null;
  // Sorted on the filtered field, so the store walks its index (sorting by ticker instead lets
  // SQLite's planner prefer a full scan in ticker order); ordered here after.
  const sort = cursor ? ([['written_seq', 1]] as const) : ([['written_at', 1]] as const);
  const buckets = (await reads.find(scoreHistory, changedFilter, { sort })).items;
  if (enteredFrom !== null) {
    // And the buckets of the dates that entered the window, whenever written.
    const known = new Set(buckets.map((b) => bucketKey(b.ticker, b.month)));
    for await (const b of bucketsByTicker(reads, await symbolsOf(reads, s.req.tickers, s.wanted), enteredFrom, endMonth)) {
      if (!known.has(bucketKey(b.ticker, b.month))) buckets.push(b);
    }
  }
  return buckets.sort(byTickerThenMonth);
}

/** Reads the window's buckets by ticker and month, a slice of tickers a read, until the answer is full. */
async function takeByTicker(reads: ReadStore, s: Scope, take: (buckets: HistoryBucket[]) => Promise<boolean>): Promise<void> {
  let symbols = await symbolsOf(reads, s.req.tickers, s.wanted);
  const page = s.page;
  if (page) symbols = symbols.filter((t) => t >= page.ticker);
  for (let i = 0; i < symbols.length; i += TICKERS_PER_READ) {
    const found = await reads.find(
      scoreHistory,
      { ticker: { $in: symbols.slice(i, i + TICKERS_PER_READ) }, month: { $gte: s.startMonth, $lte: s.endMonth } },
      { sort: [['ticker', 1], ['month', 1]] },
    );
    if (!(await take(found.items))) break;
    // A large answer is built in slices: let other requests run in between.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** The month buckets of some tickers between two months, ordered by ticker then month, a slice of tickers a read. */
async function* bucketsByTicker(reads: ReadStore, symbols: string[], fromMonth: string, toMonth: string): AsyncIterable<HistoryBucket> {
  for (let i = 0; i < symbols.length; i += TICKERS_PER_READ) {
    const page = await reads.find(
      scoreHistory,
      { ticker: { $in: symbols.slice(i, i + TICKERS_PER_READ) }, month: { $gte: fromMonth, $lte: toMonth } },
      { sort: [['ticker', 1], ['month', 1]] },
    );
    yield* page.items;
  }
}

/** The tickers to read, sorted: those asked, else the caller's universe, else every scored ticker. */
async function symbolsOf(reads: ReadStore, asked: string[] | null, wanted: ReadonlySet<string> | null): Promise<string[]> {
  return [...(asked ?? (wanted ? wanted : await allScoredTickers(reads)))].sort();
}

/** Months from `a` to `b` (YYYY-MM): 0 for the same month. */
function monthsApart(a: string, b: string): number {
  return (Number(b.slice(0, 4)) - Number(a.slice(0, 4))) * 12 + Number(b.slice(5, 7)) - Number(a.slice(5, 7));
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

export interface MultiTickerHistoryRow extends ScoreFields {
  /**
   * When the row was last written (first publication or latest restatement), `YYYY-MM-DD HH:MM:SS`
   * UTC. Compare it with your stored copy to detect corrections; to fetch them, loop on `next_since`.
   * @format timestamp
   */
  restated_at: string;
}

export interface MultiTickerHistoryResponse {
  /** Ordered by ticker, then date. */
  rows: MultiTickerHistoryRow[];
  /**
   * Number of rows returned: the billed quantity.
   * @isInt
   */
  count: number;
  /**
   * Number of distinct tickers among the rows.
   * @isInt
   */
  tickers: number;
  /**
   * Effective first date, after flooring at your tier's history depth.
   * @format date
   */
  start: string | null;
  /**
   * Effective last date, after capping at your as-of date.
   * @format date
   */
  end: string | null;
  /** Echo of the `since` filter (or cursor), as sent; null when none was sent. */
  since: string | null;
  /**
   * The sync cursor: send it back as `since` to get every row written (new or restated) after this
   * answer, and every row that entered your window since (the free tier's as-of date moves a day
   * at a time), each exactly once. Present on every answer, an empty one too. Opaque: store it as
   * received (it starts with `c1_`).
   */
  next_since: string;
  /**
   * true when the rows after your cursor were more than one call returns (200,000): this answer
   * holds the first ones, and `next_since` continues with the rest at once. Only with a cursor.
   */
  has_more: boolean;
  /**
   * Echo of `as_known_at` as the instant used (ISO 8601, UTC, to the millisecond); null when none was sent.
   * @format date-time
   */
  as_known_at: string | null;
  /**
   * Data as-of date. On the free tier it trails the current date by 7 days.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(
  call: MeteredCall,
  tickers: string | undefined,
  start: string | undefined,
  end: string | undefined,
  since: string | undefined,
  asKnownAt: string | undefined,
): Promise<MultiTickerHistoryResponse> {
  const list = parseTickerList(tickers);
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  // Sent empty is no instant and no cursor: refused (parseInstantParam), like an empty as_known_at.
  const sent = since?.trim();
  const cursor = sent !== undefined && isSyncCursor(sent) ? decodeSyncCursor(sent) : undefined;
  const sinceAt = cursor ? undefined : parseInstantParam('since', sent, 'up');
  const knownAt = parseInstantParam('as_known_at', asKnownAt);
  const v = await call.visibility();
  const budget = { rows: call.unitsAllowed('multi_history'), over: () => call.overBudget('multi_history') };
  const result = await getMultiTickerHistory(call.ctx.reads, v, { tickers: list, start: from, end: to, since: sinceAt, cursor, asKnownAt: knownAt }, MAX_ROWS_PER_CALL, budget);
  await call.charge('multi_history', result.rows.length);
  const seen = new Set<string>();
  const rows = result.rows.map((r): MultiTickerHistoryRow => {
    seen.add(r.ticker);
    return { ...scoreFieldsOf(r), restated_at: timestampOf(r.restated_at) };
  });
  return {
    rows,
    count: rows.length,
    tickers: seen.size,
    start: result.start,
    end: result.end,
    since: sent ?? null,
    next_since: encodeSyncCursor(result.next),
    has_more: result.more,
    as_known_at: knownAt ?? null,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }),
  };
}
