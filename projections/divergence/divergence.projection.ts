import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { round1, round2 } from '../../src/domain/composite.js';
import type { ClosePricesRecorded } from '../../src/domain/scores/reference.events.js';
import type { ScoreEvent } from '../../src/domain/scores/score.events.js';
import { dailyScores, emptyDay, tickerIndex, type DailyScores } from '../shared/daily-scores.js';
import { dictionary, scoreAt } from '../shared/columns.js';
import { latestOnOrBefore, prices, seriesKey } from '../shared/daily-series.js';

/**
 * Divergence extremes, their events (flag → close with prices) and score moves (docs/methodology.md).
 *
 * Rules, all from event data only (no clock), so a replay rebuilds identical documents:
 * - gap = round1(main_street − wall_street); direction +1 (bull) when gap > 0, −1 (bear) when < 0.
 * - percentile = (tickers of the day with |gap| strictly below this one's) / (n − 1): the lowest
 *   |gap| is 0, the highest 1, ties share the lower rank; n = 1 gives 1. Shown to 4 decimals;
 *   the thresholds are compared exactly (integers), never on the rounded value.
 * - extreme: percentile ≥ 0.95 and gap ≠ 0. days_at_extreme counts consecutive extreme days of one
 *   direction (a flip restarts it at 1).
 * - An event opens on day 1 of an extreme run when none is open. An open event closes on the
 *   first later day when the percentile is below 0.5, or on its 60th trading day after the flag,
 *   or when an extreme of the opposite direction starts (which then opens its own event). A new
 *   run in the same direction while the event is still open continues that event.
 * - "Trading days" are the dates that have scores; a ticker missing from a day keeps its state
 *   unchanged (carried) and that day does not count for it.
 * - Prices: the close on the date, else the latest earlier close (searched back 24 months).
 *   pct_change = (price_at_close / price_at_flag − 1) × 100, 2 decimals, not direction-adjusted;
 *   days = calendar days flag → close.
 * - score move: |service_score − the ticker's previous scored day's| ≥ 10 (rounded to 1 decimal).
 *
 * A day's document keeps only what the next day needs and the day's scores do not say: the state
 * of the tickers at an extreme or in an open event (most tickers, most days, have none), and the
 * last cell of the tickers not scored that day. Gaps and percentiles are computed from the day's
 * scores (`daily_scores`) when needed, by the projection and by the queries alike.
 *
 * Restatements: a ScoresRestated (or a late ScoresPublished) for date D recomputes the states from
 * D forward, day by day, diffing each day's old and new opens and closes and undoing/applying only
 * those. It stops as soon as a recomputed day equals the stored one, because everything after
 * depends only on that day's state and later scores; a demo restatement (1–5 days after its date)
 * rarely changes a state, so it costs one day recompute. Score moves depend on scores only: those
 * of the restated tickers are fixed on D and on each one's next scored day.
 */

/**
 * A scored ticker's state on a day: [days_at_extreme, run direction (−1|0|1), open event's
 * flag_date or null, open event's direction, trading days since its flag].
 */
export type DivergenceState = [days_at_extreme: number, run_dir: -1 | 0 | 1, open_flag: string | null, open_dir: -1 | 0 | 1, open_days: number];

/** One ticker on one day, as queries show it: [gap, percentile, ...its state, service_score]. */
export type DivergenceCell = [
  gap: number,
  percentile: number,
  days_at_extreme: number,
  run_dir: -1 | 0 | 1,
  open_flag: string | null,
  open_dir: -1 | 0 | 1,
  open_days: number,
  service_score: number,
];

export interface DivergenceDay {
  date: string;
  /**
   * Scored tickers at an extreme or in an open event, in the order of the day's scores; every
   * other ticker scored that day has the zero state [0, 0, null, 0, 0].
   */
  state: Record<string, DivergenceState>;
  /** Tickers not scored that day: their last cell, unchanged. */
  carried: Record<string, DivergenceCell>;
}

export type DivergenceDirection = 'bull' | 'bear';

export interface DivergenceEventDoc {
  ticker: string;
  direction: DivergenceDirection;
  flag_date: string;
  flag_gap: number;
  price_at_flag: number | null;
  close_date: string | null;
  price_at_close: number | null;
  pct_change: number | null;
  days: number | null;
  status: 'open' | 'closed';
}

export interface ScoreMoveDoc {
  ticker: string;
  date: string;
  service_score: number;
  prior_score: number;
  delta: number;
}

/** The dates processed, in order (the projection cannot query, so it keeps its own index). */
interface DivergenceDates {
  id: 'dates';
  dates: string[];
}

export const divergenceDays = defineCollection<DivergenceDay>({
  name: 'divergence_days',
  key: (d) => d.date,
  fields: ['date'],
  indexes: [['date']],
});
export const divergenceDates = defineCollection<DivergenceDates>({
  name: 'divergence_dates',
  key: (d) => d.id,
  fields: [],
  indexes: [],
});
export const divergenceEvents = defineCollection<DivergenceEventDoc>({
  name: 'divergence_events',
  key: (e) => `${e.ticker}|${e.flag_date}`,
  fields: ['ticker', 'flag_date', 'close_date', 'status', 'direction'],
  indexes: [
    ['status', 'flag_date'],
    ['status', 'close_date'],
    ['ticker', 'flag_date'],
  ],
});
export const scoreMoves = defineCollection<ScoreMoveDoc>({
  name: 'score_moves',
  key: (m) => `${m.ticker}|${m.date}`,
  fields: ['ticker', 'date'],
  indexes: [['date'], ['ticker', 'date']],
});

/**
 * The percentile thresholds (docs/methodology.md) as fractions, so that `percentile >= 0.95` is decided on
 * integers: percentile = less / (n − 1), and less / (n − 1) ≥ num / den ⇔ less · den ≥ num · (n − 1).
 */
export const EXTREME_PERCENTILE = { num: 19, den: 20 } as const; // 0.95: at an extreme
export const CLOSE_PERCENTILE = { num: 1, den: 2 } as const; // 0.5: below it an event closes
const atLeast = (less: number, n: number, p: { num: number; den: number }) => less * p.den >= p.num * (n - 1);
export const MAX_TRADING_DAYS_OPEN = 60;
export const SCORE_MOVE_THRESHOLD = 10;

const DAY_MS = 86_400_000;
export const calendarDays = (from: string, to: string) => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
export const directionName = (dir: number): DivergenceDirection => (dir > 0 ? 'bull' : 'bear');
const sign = (x: number): -1 | 0 | 1 => (x > 0 ? 1 : x < 0 ? -1 : 0);
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** Lowest index i with sorted[i] >= x (sorted ascending). */
function lowerBound<T extends number | string>(sorted: ArrayLike<T>, x: T): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Largest |gap| × 10 of scores within 0–100: the ranks below are counted in an array this long. */
const MAX_GAP_TENTHS = 1_000;

/**
 * The day's gaps (the same as crossSection()'s) and, per ticker, the number of tickers with a
 * strictly smaller |gap|. Gaps are rounded to 1 decimal, so |gap| × 10 is an integer and the
 * ranks are counted (linear time) instead of sorted; only a day with scores outside 0–100, which
 * no writer produces, is sorted.
 */
function ranksOf(scores: DailyScores): { gap: Float64Array; less: Int32Array } {
  const n = scores.tickers.length;
  const gap = new Float64Array(n);
  const tenths = new Float64Array(n);
  let max = 0;
  for (let i = 0; i < n; i++) {
    const g = round1(scoreAt(scores.main_street, i) - scoreAt(scores.wall_street, i));
    gap[i] = g;
    tenths[i] = Math.round(Math.abs(g) * 10);
    if (tenths[i]! > max) max = tenths[i]!;
  }
  const less = new Int32Array(n);
  if (max <= MAX_GAP_TENTHS) {
    const below = new Int32Array(max + 2); // below[k + 1] counts |gap| = k, then prefix sums
    for (let i = 0; i < n; i++) below[tenths[i]! + 1]! += 1;
    for (let k = 1; k <= max + 1; k++) below[k]! += below[k - 1]!;
    for (let i = 0; i < n; i++) less[i] = below[tenths[i]!]!;
  } else {
    const sorted = tenths.slice().sort();
    for (let i = 0; i < n; i++) less[i] = lowerBound(sorted, tenths[i]!);
  }
  return { gap, less };
}

const ZERO_STATE: Readonly<DivergenceState> = [0, 0, null, 0, 0];

const percentile = (less: number, n: number) => (n <= 1 ? 1 : round4(less / (n - 1)));

/** The cells of the tickers scored on a day, in the order of its scores. */
export function scoredCells(day: DivergenceDay, scores: DailyScores): Record<string, DivergenceCell> {
  const n = scores.tickers.length;
  const { gap, less } = ranksOf(scores);
  const cells: Record<string, DivergenceCell> = {};
  for (let i = 0; i < n; i++) {
    const ticker = scores.tickers[i]!;
    const [days, run, open, openDir, openDays] = day.state[ticker] ?? ZERO_STATE;
    cells[ticker] = [gap[i]!, percentile(less[i]!, n), days, run, open, openDir, openDays, scoreAt(scores.service_score, i)];
  }
  return cells;
}

/** The state of a carried cell. */
const carriedState = (c: DivergenceCell): DivergenceState => [c[2], c[3], c[4], c[5], c[6]];

/** A processed day with its scores: what the next day is computed from. */
export interface DayWithScores {
  day: DivergenceDay;
  scores: DailyScores;
}

/** A day's states from its scores and the previous day. Pure. */
export function computeDay(date: string, scores: DailyScores, prev: DayWithScores | null): DivergenceDay {
  const n = scores.tickers.length;
  const { gap, less } = ranksOf(scores);
  const state = dictionary<DivergenceState>();
  // The day before's states, scored or carried (few tickers have one; the others had the zero state).
  const prevState = prev?.day.state;
  const prevCarried = prev && hasKeys(prev.day.carried) ? prev.day.carried : null;
  for (let i = 0; i < n; i++) {
    const ticker = scores.tickers[i]!;
    const dir = sign(gap[i]!);
    const extreme = dir !== 0 && (n <= 1 || atLeast(less[i]!, n, EXTREME_PERCENTILE));
    const belowHalf = n > 1 && !atLeast(less[i]!, n, CLOSE_PERCENTILE);
    const carriedCell = prevCarried?.[ticker];
    const p: Readonly<DivergenceState> | undefined = carriedCell ? carriedState(carriedCell) : prevState?.[ticker];
    const days = extreme ? (p && p[1] === dir ? p[0] + 1 : 1) : 0;
    let open = p?.[2] ?? null;
    let openDir = p?.[3] ?? 0;
    let openDays = p?.[4] ?? 0;
    if (open !== null) {
      openDays += 1;
      if (belowHalf || openDays >= MAX_TRADING_DAYS_OPEN || (extreme && dir !== openDir)) {
        open = null;
        openDir = 0;
        openDays = 0;
      }
    }
    if (open === null && extreme && days === 1) {
      open = date;
      openDir = dir;
      openDays = 0;
    }
    if (days > 0 || open !== null) state[ticker] = [days, extreme ? dir : 0, open, openDir, openDays];
  }
  const carried = dictionary<DivergenceCell>();
  if (prev) {
    let scored: Set<string> | null = null;
    const isScored = (t: string) => (scored ??= new Set(scores.tickers)).has(t);
    // Most days score the tickers of the day before, in the same order: none of them is carried.
    if (!sameTickers(prev.scores.tickers, scores.tickers)) {
      let prevCells: Record<string, DivergenceCell> | null = null;
      for (const t of prev.scores.tickers) if (!isScored(t)) carried[t] = (prevCells ??= scoredCells(prev.day, prev.scores))[t]!;
    }
    for (const t in prev.day.carried) if (!isScored(t)) carried[t] = prev.day.carried[t]!;
  }
  return { date, state, carried };
}

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

function sameTickers(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** flag_date of the event open for `ticker` on `day`, or null. */
function openOf(day: DivergenceDay | null, ticker: string): string | null {
  return day ? (day.state[ticker]?.[2] ?? day.carried[ticker]?.[4] ?? null) : null;
}

/** flag_date of the event of `ticker` that closed on `cur` (the day after `prev`), or null. */
function closedOf(prev: DivergenceDay | null, cur: DivergenceDay, ticker: string): string | null {
  const p = openOf(prev, ticker);
  return p !== null && openOf(cur, ticker) !== p ? p : null;
}

/** Close on `date`, else the latest earlier close of the 24 months up to it (that month and the 23 before), else null. */
export async function priceOn(ctx: Pick<ProjectionContext, 'get'>, ticker: string, date: string): Promise<number | null> {
  const [y, m] = date.split('-').map(Number) as [number, number];
  const back = y * 12 + (m - 1) - 23;
  const oldest = `${Math.floor(back / 12)}-${String((back % 12) + 1).padStart(2, '0')}-01`;
  for (let year = y; year >= Math.floor(back / 12); year--) {
    const bucket = await ctx.get(prices, seriesKey(ticker, String(year)));
    const close = bucket && latestOnOrBefore(bucket, date);
    if (close) return close.date >= oldest ? close.value : null;
  }
  return null;
}

/** pct_change and days of a closed event from its prices and dates. */
function withOutcome(e: DivergenceEventDoc): DivergenceEventDoc {
  if (e.close_date === null) return { ...e, price_at_close: null, pct_change: null, days: null, status: 'open' };
  const pct = e.price_at_flag && e.price_at_close !== null ? round2((e.price_at_close / e.price_at_flag - 1) * 100) : null;
  return { ...e, pct_change: pct, days: calendarDays(e.flag_date, e.close_date), status: 'closed' };
}

/** The ticker's gap on a day (its event's flag_gap), from the day's scores. */
function gapOn(scores: DailyScores, ticker: string): number {
  const i = scores.tickers.indexOf(ticker);
  return round1(scoreAt(scores.main_street, i) - scoreAt(scores.wall_street, i));
}

/** The tickers that can open or close an event on `date`: those with one open the day before, or opening one. */
function transitionCandidates(
  date: string,
  oldPrev: DivergenceDay | null,
  oldCur: DivergenceDay | null,
  newPrev: DivergenceDay | null,
  newCur: DivergenceDay,
): Set<string> {
  const names = new Set<string>();
  for (const prev of oldPrev === newPrev ? [oldPrev] : [oldPrev, newPrev]) {
    if (!prev) continue;
    for (const t in prev.state) if (prev.state[t]![2] !== null) names.add(t);
    for (const t in prev.carried) if (prev.carried[t]![4] !== null) names.add(t);
  }
  for (const cur of [oldCur, newCur]) if (cur) for (const t in cur.state) if (cur.state[t]![2] === date) names.add(t);
  return names;
}

/**
 * Brings the events opened or closed on `date` from what the old chain (oldPrev → oldCur, oldCur
 * null when the day is new) produced to what the new chain produces: undoes the old transitions
 * the new one lacks, then applies the new ones (refreshing their gap and prices). `only`: the
 * tickers to look at, when only they can have changed.
 */
async function reconcileEvents(
  ctx: ProjectionContext,
  date: string,
  scores: DailyScores,
  oldPrev: DivergenceDay | null,
  oldCur: DivergenceDay | null,
  newPrev: DivergenceDay | null,
  newCur: DivergenceDay,
  only?: ReadonlySet<string>,
): Promise<void> {
  for (const ticker of only ?? transitionCandidates(date, oldPrev, oldCur, newPrev, newCur)) {
    const oOpened = oldCur?.state[ticker]?.[2] === date;
    const oClosed = oldCur ? closedOf(oldPrev, oldCur, ticker) : null;
    const nState = newCur.state[ticker];
    const nOpened = nState?.[2] === date;
    const nClosed = closedOf(newPrev, newCur, ticker);
    // undo
    if (oOpened && !nOpened) ctx.delete(divergenceEvents, `${ticker}|${date}`);
    if (oClosed && oClosed !== nClosed) {
      const e = await ctx.get(divergenceEvents, `${ticker}|${oClosed}`);
      if (e && e.close_date === date) ctx.upsert(divergenceEvents, withOutcome({ ...e, close_date: null }));
    }
    // apply
    if (nOpened) {
      const direction = directionName(nState[3]);
      const flagGap = gapOn(scores, ticker);
      // An event flagged on a day computed before keeps what later days set (its close); a new day has none.
      const existing = oldCur && (await ctx.get(divergenceEvents, `${ticker}|${date}`));
      const base: DivergenceEventDoc = existing ?? {
        ticker,
        direction,
        flag_date: date,
        flag_gap: flagGap,
        price_at_flag: null,
        close_date: null,
        price_at_close: null,
        pct_change: null,
        days: null,
        status: 'open',
      };
      ctx.upsert(divergenceEvents, withOutcome({ ...base, direction, flag_gap: flagGap, price_at_flag: await priceOn(ctx, ticker, date) }));
    }
    if (nClosed) {
      const e = await ctx.get(divergenceEvents, `${ticker}|${nClosed}`);
      if (e) ctx.upsert(divergenceEvents, withOutcome({ ...e, close_date: date, price_at_close: await priceOn(ctx, ticker, date) }));
    }
  }
}

/**
 * Writes the score move of `ticker` on `date` (its service_score `score` against `prior`, the
 * score of its previous scored day), or removes the one an earlier computation wrote. `known`:
 * the day was processed before, so a move may exist (a new day has none to remove).
 */
function writeMove(ctx: ProjectionContext, ticker: string, date: string, score: number, prior: number | undefined, known: boolean): void {
  const delta = prior === undefined ? null : round1(score - prior);
  if (delta !== null && Math.abs(delta) >= SCORE_MOVE_THRESHOLD) {
    ctx.upsert(scoreMoves, { ticker, date, service_score: score, prior_score: prior!, delta });
  } else if (known) {
    ctx.delete(scoreMoves, `${ticker}|${date}`);
  }
}

function sameRecords(a: Record<string, readonly unknown[]>, b: Record<string, readonly unknown[]>): boolean {
  let n = 0;
  for (const t in a) {
    const x = a[t]!;
    const y = b[t];
    if (!y || x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    n++;
  }
  return n === Object.keys(b).length;
}

const sameDay = (a: DivergenceDay | null, b: DivergenceDay) => a !== null && sameRecords(a.state, b.state) && sameRecords(a.carried, b.carried);

/** Position of `date` in the processed dates, inserting it (and saving the index) when new. */
async function datePosition(ctx: ProjectionContext, date: string): Promise<{ dates: string[]; at: number }> {
  const index = (await ctx.get(divergenceDates, 'dates')) ?? { id: 'dates' as const, dates: [] };
  const at = lowerBound(index.dates, date);
  if (index.dates[at] !== date) {
    index.dates.splice(at, 0, date);
    ctx.upsert(divergenceDates, index);
  }
  return { dates: index.dates, at };
}

/** Recomputes the states from `date` forward until a day comes out as it was stored; then the moves of `tickers`. */
async function recomputeFrom(ctx: ProjectionContext, date: string, tickers: readonly string[]): Promise<void> {
  const { dates, at: start } = await datePosition(ctx, date);
  const scoresOn = async (d: string) => (await ctx.get(dailyScores, d)) ?? emptyDay(d);
  const prevDay = start > 0 ? await ctx.get(divergenceDays, dates[start - 1]!) : null;
  const prev: DayWithScores | null = prevDay && { day: prevDay, scores: await scoresOn(prevDay.date) };
  let oldPrev = prevDay;
  let newPrev = prev;
  const scores = await scoresOn(date);
  let known = false;
  for (let j = start; j < dates.length; j++) {
    const d = dates[j]!;
    const dayScores = j === start ? scores : await scoresOn(d);
    const oldCur = await ctx.get(divergenceDays, d);
    if (j === start) known = oldCur !== null;
    const newCur = computeDay(d, dayScores, newPrev);
    const unchanged = sameDay(oldCur, newCur);
    // Same states after the same day: the same opens and closes, and only the written tickers'
    // events can have a new flag gap (the usual restatement).
    const only = unchanged && oldPrev === (newPrev?.day ?? null) ? new Set(tickers) : undefined;
    await reconcileEvents(ctx, d, dayScores, oldPrev, oldCur, newPrev?.day ?? null, newCur, only);
    // Unchanged day: every later state depends only on it and later scores, so it is unchanged too.
    if (unchanged) break;
    ctx.upsert(divergenceDays, newCur);
    // A day the old chain did not have (a late first publication) leaves the old chain's prev as it was.
    oldPrev = oldCur ?? oldPrev;
    newPrev = { day: newCur, scores: dayScores };
  }
  // Score moves: the written scores are the tickers' own on `date` and the prior of their next
  // scored day. A new day holds only this event's rows: walk them in the day's order, which is
  // usually the previous day's order too.
  const indexes = known ? tickers.map((t) => scores.tickers.indexOf(t)) : scores.tickers.map((_, i) => i);
  const prevIndex = prev && !sameTickers(prev.scores.tickers, scores.tickers) ? tickerIndex(prev.scores) : null;
  for (const i of indexes) {
    if (i < 0) continue;
    const ticker = scores.tickers[i]!;
    const score = scoreAt(scores.service_score, i);
    const p = !prev ? -1 : prevIndex ? (prevIndex.get(ticker) ?? -1) : i;
    const prior = p >= 0 ? scoreAt(prev!.scores.service_score, p) : prev?.day.carried[ticker]?.[7];
    writeMove(ctx, ticker, date, score, prior, known);
    for (let j = start + 1; j < dates.length; j++) {
      const next = await scoresOn(dates[j]!);
      const k = next.tickers.indexOf(ticker);
      if (k < 0) continue;
      writeMove(ctx, ticker, next.date, scoreAt(next.service_score, k), score, true);
      break;
    }
  }
}

/** A late price (its date's day was computed before it came): refreshes the events flagged or closed on its date. */
async function applyPrice(ctx: ProjectionContext, event: ClosePricesRecorded): Promise<void> {
  const { date } = event.data;
  const day = await ctx.get(divergenceDays, date);
  if (!day) return;
  const index = await ctx.get(divergenceDates, 'dates');
  const i = index ? lowerBound(index.dates, date) : -1;
  const prev = i > 0 ? await ctx.get(divergenceDays, index!.dates[i - 1]!) : null;
  const scores = (await ctx.get(dailyScores, date)) ?? emptyDay(date);
  await reconcileEvents(ctx, date, scores, prev, day, prev, day, new Set(event.data.closes.map((c) => c.ticker)));
}

/**
 * A batch: each date with scores in it is recomputed once (in date order, with the batch's last
 * scores, for the union of its events' tickers) instead of once per event, so a publication and
 * the restatements of its date that follow it in the batch cost one day computation. The states,
 * events and moves depend only on the scores and prices, so they come out as event by event
 * (`test/unit/batch-apply.test.ts`). A late price (for a date computed before it came) is applied
 * after the dates are recomputed; one for a date not computed yet changes nothing, as alone.
 */
async function applyBatch(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  // The batch's days in one read (the runner keeps them for the batch): on a server a read per day is a round trip per day.
  await ctx.getMany(divergenceDays, [...new Set(events.map((e) => (e as unknown as ScoreEvent).data.date))]);
  const dates = new Map<string, ScoreEvent[]>();
  const latePrices: ClosePricesRecorded[] = [];
  for (const raw of events) {
    const event = raw as unknown as ScoreEvent | ClosePricesRecorded;
    const { date } = event.data;
    if (event.type === 'ClosePricesRecorded') {
      // As alone: a no-op unless its date's day exists (computed before the batch, or scored earlier in it).
      if (dates.has(date) || (await ctx.get(divergenceDays, date))) latePrices.push(event);
      continue;
    }
    const same = dates.get(date);
    if (same) same.push(event);
    else dates.set(date, [event]);
  }
  for (const date of [...dates.keys()].sort()) {
    // The events' tickers, a ticker perhaps more than once (recomputeFrom writes its move again, the same).
    const tickers: string[] = [];
    for (const e of dates.get(date)!) for (const r of e.data.rows) tickers.push(r.ticker);
    await recomputeFrom(ctx, date, tickers);
  }
  for (const event of latePrices) await applyPrice(ctx, event);
}

export const divergenceProjection: Projection = {
  // v2: only the states in the day documents (a new name rebuilds the read models of an existing store).
  name: 'divergence-v2',
  collections: [divergenceDays, divergenceDates, divergenceEvents, scoreMoves],
  eventTypes: ['ScoresPublished', 'ScoresRestated', 'ClosePricesRecorded'],
  apply(event: RecordedEvent, ctx: ProjectionContext) {
    return applyBatch([event], ctx);
  },
  applyBatch,
};
