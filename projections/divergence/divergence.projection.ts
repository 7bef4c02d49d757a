import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { round1, round2 } from '../../src/domain/composite.js';
import type { ClosePricesRecorded } from '../../src/events/reference-events.js';
import type { ScoreEvent } from '../../src/events/score-events.js';
import { dailyScores, type DailyValues } from '../daily-scores/daily-scores.projection.js';
import { prices } from '../reference/reference.projection.js';

/**
 * Divergence extremes, their events (flag → close with prices) and score moves (DESIGN §5).
 *
 * Rules, all from event data only (no clock), so a replay rebuilds identical documents:
 * - gap = round1(main_street − wall_street); direction +1 (bull) when gap > 0, −1 (bear) when < 0.
 * - percentile = (tickers of the day with |gap| strictly below this one's) / (n − 1): the lowest
 *   |gap| is 0, the highest 1, ties share the lower rank; n = 1 gives 1. Stored to 4 decimals;
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
 * - score move: |service_score − previous trading day's| ≥ 10.
 *
 * Restatements: a ScoresRestated (or a late ScoresPublished) for date D recomputes every ticker's
 * state from D forward, day by day, diffing each day's old and new transitions (opens, closes,
 * moves) and undoing/applying only those. It stops as soon as a recomputed day equals the stored
 * one, because everything after depends only on that day and later scores; and when a day changed
 * only in values (gap, percentile, score) and not in state, the next day only has its score moves
 * fixed. A demo restatement (1–5 days after its date) so costs one or two day recomputes; over the
 * full demo log (1,984 days, 3,612 restatements) this projection adds about 4 s to a full replay.
 */

/**
 * One ticker on one day: [gap, percentile, days_at_extreme, run direction (−1|0|1),
 * open event's flag_date or null, open event's direction, trading days since its flag, service_score].
 */
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
  /** Tickers scored that day. */
  rows: Record<string, DivergenceCell>;
  /** Tickers not scored that day: their last state, unchanged. */
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
 * The percentile thresholds (DESIGN §5) as fractions, so that `percentile >= 0.95` is decided on
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
function lowerBound(sorted: Float64Array, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A day's cells from its scores and the previous day's state. Pure. */
export function computeDay(date: string, values: Readonly<Record<string, DailyValues>>, prev: DivergenceDay | null): DivergenceDay {
  const tickers = Object.keys(values);
  const n = tickers.length;
  // The same gap as crossSection(): round1(main_street − wall_street).
  const gaps = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[tickers[i]!]!;
    gaps[i] = round1(v[0] - v[1]);
  }
  const abs = gaps.map(Math.abs).sort();
  const rows: Record<string, DivergenceCell> = {};
  // Keys keep the order of the day's scores (itself fixed by the events), so a replay writes the same documents.
  for (let i = 0; i < n; i++) {
    const ticker = tickers[i]!;
    const s = { ticker, gap: gaps[i]!, service_score: values[ticker]![2] };
    const less = lowerBound(abs, Math.abs(s.gap));
    const percentile = n <= 1 ? 1 : less / (n - 1);
    const dir = sign(s.gap);
    const extreme = dir !== 0 && (n <= 1 || atLeast(less, n, EXTREME_PERCENTILE));
    const belowHalf = n > 1 && !atLeast(less, n, CLOSE_PERCENTILE);
    const p = prev ? (prev.rows[s.ticker] ?? prev.carried[s.ticker]) : undefined;
    const days = extreme ? (p && p[3] === dir ? p[2] + 1 : 1) : 0;
    let open: string | null = p?.[4] ?? null;
    let openDir: -1 | 0 | 1 = p?.[5] ?? 0;
    let openDays = p?.[6] ?? 0;
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
    rows[s.ticker] = [s.gap, round4(percentile), days, extreme ? dir : 0, open, openDir, openDays, s.service_score];
  }
  const carried: Record<string, DivergenceCell> = {};
  if (prev) {
    for (const t in prev.rows) if (!(t in rows)) carried[t] = prev.rows[t]!;
    for (const t in prev.carried) if (!(t in rows)) carried[t] = prev.carried[t]!;
  }
  return { date, rows, carried };
}

const cellOf = (day: DivergenceDay | null, ticker: string): DivergenceCell | undefined => (day ? (day.rows[ticker] ?? day.carried[ticker]) : undefined);

interface Transitions {
  opened: boolean;
  /** flag_date of the event that closed on this day. */
  closed: string | null;
  move: ScoreMoveDoc | null;
}

/** A cheap pre-check of `transitions` (no allocation): could this ticker have any on this day? */
function mayTransition(ticker: string, date: string, prev: DivergenceDay | null, cur: DivergenceDay | null): boolean {
  const c = cur?.rows[ticker];
  if (!c) return false;
  if (c[4] === date) return true;
  const p = prev ? (prev.rows[ticker] ?? prev.carried[ticker]) : undefined;
  return p !== undefined && ((p[4] !== null && c[4] !== p[4]) || Math.abs(c[7] - p[7]) >= SCORE_MOVE_THRESHOLD - 0.1);
}

function transitions(ticker: string, date: string, prev: DivergenceDay | null, cur: DivergenceDay | null): Transitions {
  const p = cellOf(prev, ticker);
  const c = cur?.rows[ticker];
  const cc = cellOf(cur, ticker);
  let move: ScoreMoveDoc | null = null;
  if (p && c) {
    const delta = round1(c[7] - p[7]);
    if (Math.abs(delta) >= SCORE_MOVE_THRESHOLD) move = { ticker, date, service_score: c[7], prior_score: p[7], delta };
  }
  return {
    opened: c?.[4] === date,
    closed: p?.[4] && cc?.[4] !== p[4] ? p[4] : null,
    move,
  };
}

/** Close on `date`, else the latest earlier close (looking back up to 24 month buckets). */
export async function priceOn(ctx: Pick<ProjectionContext, 'get'>, ticker: string, date: string): Promise<number | null> {
  let month = date.slice(0, 7);
  for (let i = 0; i < 24; i++) {
    const bucket = await ctx.get(prices, `${ticker}|${month}`);
    if (bucket) {
      let best: string | null = null;
      for (const d of Object.keys(bucket.values)) if (d <= date && (best === null || d > best)) best = d;
      if (best !== null) return bucket.values[best]!;
    }
    const [y, m] = month.split('-').map(Number) as [number, number];
    month = m === 1 ? `${y - 1}-12` : `${y}-${String(m - 1).padStart(2, '0')}`;
  }
  return null;
}

/** pct_change and days of a closed event from its prices and dates. */
function withOutcome(e: DivergenceEventDoc): DivergenceEventDoc {
  if (e.close_date === null) return { ...e, price_at_close: null, pct_change: null, days: null, status: 'open' };
  const pct = e.price_at_flag && e.price_at_close !== null ? round2((e.price_at_close / e.price_at_flag - 1) * 100) : null;
  return { ...e, pct_change: pct, days: calendarDays(e.flag_date, e.close_date), status: 'closed' };
}

/**
 * Brings events and moves of `date` from what the old chain (oldPrev → oldCur) produced to what
 * the new chain produces: undoes the old transitions the new one lacks, then applies the new ones.
 */
async function reconcile(
  ctx: ProjectionContext,
  date: string,
  oldPrev: DivergenceDay | null,
  oldCur: DivergenceDay | null,
  newPrev: DivergenceDay | null,
  newCur: DivergenceDay,
  only?: ReadonlySet<string>,
): Promise<void> {
  // Only a scored ticker can open, close or move (a carried one keeps its previous state).
  const names = oldCur ? new Set([...Object.keys(newCur.rows), ...Object.keys(oldCur.rows)]) : Object.keys(newCur.rows);
  for (const ticker of names) {
    if (only && !only.has(ticker)) continue;
    if (!mayTransition(ticker, date, oldPrev, oldCur) && !mayTransition(ticker, date, newPrev, newCur)) continue;
    const o = transitions(ticker, date, oldPrev, oldCur);
    const n = transitions(ticker, date, newPrev, newCur);
    if (!o.opened && !o.closed && !o.move && !n.opened && !n.closed && !n.move) continue;
    // undo
    if (o.opened && !n.opened) ctx.delete(divergenceEvents, `${ticker}|${date}`);
    if (o.closed && o.closed !== n.closed) {
      const e = await ctx.get(divergenceEvents, `${ticker}|${o.closed}`);
      if (e && e.close_date === date) ctx.upsert(divergenceEvents, withOutcome({ ...e, close_date: null }));
    }
    if (o.move && !n.move) ctx.delete(scoreMoves, `${ticker}|${date}`);
    // apply
    if (n.opened) {
      const c = newCur.rows[ticker]!;
      const existing = await ctx.get(divergenceEvents, `${ticker}|${date}`);
      const base: DivergenceEventDoc = existing ?? {
        ticker,
        direction: directionName(c[5]),
        flag_date: date,
        flag_gap: c[0],
        price_at_flag: null,
        close_date: null,
        price_at_close: null,
        pct_change: null,
        days: null,
        status: 'open',
      };
      ctx.upsert(
        divergenceEvents,
        withOutcome({ ...base, direction: directionName(c[5]), flag_gap: c[0], price_at_flag: await priceOn(ctx, ticker, date) }),
      );
    }
    if (n.closed) {
      const e = await ctx.get(divergenceEvents, `${ticker}|${n.closed}`);
      if (e) ctx.upsert(divergenceEvents, withOutcome({ ...e, close_date: date, price_at_close: await priceOn(ctx, ticker, date) }));
    }
    if (n.move) ctx.upsert(scoreMoves, n.move);
  }
}

async function dayScores(ctx: ProjectionContext, date: string): Promise<Record<string, DailyValues>> {
  return (await ctx.get(dailyScores, date))?.rows ?? {};
}

function sameCells(a: Record<string, DivergenceCell>, b: Record<string, DivergenceCell>): boolean {
  let n = 0;
  for (const t in a) {
    const x = a[t]!;
    const y = b[t];
    if (!y) return false;
    for (let i = 0; i < 8; i++) if (x[i] !== y[i]) return false;
    n++;
  }
  return n === Object.keys(b).length;
}

const sameDay = (a: DivergenceDay | null, b: DivergenceDay) => a !== null && sameCells(a.rows, b.rows) && sameCells(a.carried, b.carried);

/**
 * The tickers whose cells differ between two versions of a day when they differ only in values
 * (gap, percentile, service_score) and never in state (days at extreme, run, open event); null
 * when any state differs. The next day's cells depend on the previous day only through its state,
 * so after such a day only that day's score moves of these tickers can change.
 */
function valueOnlyChanges(a: DivergenceDay, b: DivergenceDay): Set<string> | null {
  const changed = new Set<string>();
  for (const part of ['rows', 'carried'] as const) {
    const x = a[part];
    const y = b[part];
    if (Object.keys(x).length !== Object.keys(y).length) return null;
    for (const t in x) {
      const p = x[t]!;
      const q = y[t];
      if (!q) return null;
      for (let i = 2; i < 7; i++) if (p[i] !== q[i]) return null;
      if (p[0] !== q[0] || p[1] !== q[1] || p[7] !== q[7]) changed.add(t);
    }
  }
  return changed;
}

/** Recomputes the state from `date` forward until a day comes out as it was stored. */
async function recomputeFrom(ctx: ProjectionContext, date: string): Promise<void> {
  const index = (await ctx.get(divergenceDates, 'dates')) ?? { id: 'dates' as const, dates: [] };
  let dates = index.dates;
  if (!dates.includes(date)) {
    dates = [...dates, date].sort();
    ctx.upsert(divergenceDates, { id: 'dates', dates });
  }
  const start = dates.indexOf(date);
  let oldPrev = start > 0 ? await ctx.get(divergenceDays, dates[start - 1]!) : null;
  let newPrev = oldPrev;
  let valuesOnly: Set<string> | null = null;
  for (let j = start; j < dates.length; j++) {
    const d = dates[j]!;
    const oldCur = await ctx.get(divergenceDays, d);
    if (oldCur && valuesOnly && [...valuesOnly].every((t) => t in oldCur.rows)) {
      // The previous day changed only in values: this day's cells stay; only its moves may change.
      await reconcile(ctx, d, oldPrev, oldCur, newPrev, oldCur, valuesOnly);
      break;
    }
    const newCur = computeDay(d, await dayScores(ctx, d), newPrev);
    await reconcile(ctx, d, oldPrev, oldCur, newPrev, newCur);
    // Unchanged day: every later day depends only on it and its own scores, so it is unchanged too.
    if (sameDay(oldCur, newCur)) break;
    ctx.upsert(divergenceDays, newCur);
    valuesOnly = oldCur ? valueOnlyChanges(oldCur, newCur) : null;
    // A day the old chain did not have (a late first publication) leaves the old chain's prev as it was.
    oldPrev = oldCur ?? oldPrev;
    newPrev = newCur;
  }
}

export const divergenceProjection: Projection = {
  name: 'divergence',
  collections: [divergenceDays, divergenceDates, divergenceEvents, scoreMoves],
  eventTypes: ['ScoresPublished', 'ScoresRestated', 'ClosePricesRecorded'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ScoreEvent | ClosePricesRecorded;
    switch (event.type) {
      case 'ScoresPublished':
      case 'ScoresRestated':
        return recomputeFrom(ctx, event.data.date);
      case 'ClosePricesRecorded': {
        // Usually a no-op (prices come before the day's scores). A late price refreshes the
        // events flagged or closed on its date.
        const { date } = event.data;
        const day = await ctx.get(divergenceDays, date);
        if (!day) return;
        const index = await ctx.get(divergenceDates, 'dates');
        const i = index?.dates.indexOf(date) ?? -1;
        const prev = i > 0 ? await ctx.get(divergenceDays, index!.dates[i - 1]!) : null;
        await reconcile(ctx, date, prev, day, prev, day, new Set(event.data.closes.map((c) => c.ticker)));
        return;
      }
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
