import type { ReadStore } from '../../src/core/read-store.port.js';
import { round2 } from '../../src/domain/composite.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { seriesBetween, webVisits } from '../../projections/shared/daily-series.js';
import { requireVisibleTicker, tickerFromPath } from '../shared/tickers.js';
import { clampWindow, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseDateParam } from '../shared/params.js';
import { citationUrl } from '../shared/provenance.js';

/** Calendar days before d whose visits form the trailing maximum (d itself excluded). */
export const TRAILING_DAYS = 365;

export interface DailyValue {
  date: string;
  value: number;
}

/**
 * Social heat (docs/methodology.md) of every day of `series` between `start` and `end` (inclusive; no
 * `start` = from the first day), oldest first:
 *
 *   value(d) = visits(d) / max(visits(d), max visits over [d − 365, d − 1]) × 100, rounded to 2 decimals.
 *
 * The trailing window is the 365 calendar days before d: a visit dated exactly d − 365 counts, one
 * dated d − 366 does not. Days without a stored value are simply absent (no rows, no zeros in the
 * window). Edge cases: no earlier visits in the window → the denominator is visits(d) itself, so
 * 100 when visits(d) > 0; a zero denominator (visits(d) = 0 and nothing above 0 in the window) → 0,
 * "no attention" rather than a division by zero.
 *
 * `series` must be sorted by date ascending with one value per date (as `seriesBetween` returns
 * it) and should start 365 days before `start` so the first rows see their full window. One pass
 * with a monotonic deque of window maxima: O(n) whatever the length.
 */
export function socialHeat(series: readonly DailyValue[], start: string | null | undefined, end: string): DailyValue[] {
  const out: DailyValue[] = [];
  // Indices into series, their values strictly decreasing: the front is the window's maximum.
  const deque: number[] = [];
  let head = 0;
  for (let i = 0; i < series.length; i++) {
    const { date, value: visits } = series[i]!;
    if (date > end) break;
    const windowStart = addDays(date, -TRAILING_DAYS);
    while (head < deque.length && series[deque[head]!]!.date < windowStart) head++;
    if (start == null || date >= start) {
      const trailingMax = head < deque.length ? series[deque[head]!]!.value : 0;
      const denominator = Math.max(visits, trailingMax);
      out.push({ date, value: denominator > 0 ? round2((visits / denominator) * 100) : 0 });
    }
    while (deque.length > head && series[deque[deque.length - 1]!]!.value <= visits) deque.pop();
    deque.push(i);
    // Keep the array from growing with dead entries on long series.
    if (head > 64 && head * 2 > deque.length) {
      deque.splice(0, head);
      head = 0;
    }
  }
  return out;
}

export interface SocialHeatRequest {
  ticker: string;
  /** Inclusive, as asked; clamped to the caller's history floor. */
  start?: string;
  /** Inclusive, as asked; clamped to the caller's as-of date. */
  end?: string;
}

export interface SocialHeatResult {
  rows: DailyValue[];
  /** The effective start: the clamped start, else the tier's floor, else the ticker's first visits date. */
  historyFloor: string | null;
}

/** Starts before this read every stored visit (no data is that old). */
const EARLIEST_WINDOW = '1900-01-01';

/**
 * One ticker's social heat inside the caller's window, computed on the fly from the stored web
 * visits: 404 for an unknown ticker, 403 `coverage` outside the universe, dates clamped silently
 * exactly as the score history clamps them. The visits are read once, from 365 days before the
 * clamped start to its end, so the first row sees its full trailing window even when that window
 * lies before the caller's floor (the floor limits the rows returned, not the inputs).
 */
export async function getSocialHeat(reads: ReadStore, v: Visibility, req: SocialHeatRequest): Promise<SocialHeatResult> {
  await requireVisibleTicker(reads, v, req.ticker);
  const w = clampWindow(v, req.start, req.end);
  let rows: DailyValue[] = [];
  let first: string | null = null;
  if (w.end !== null && (w.start === null || w.start <= w.end)) {
    // A start long before any data (0001-01-01) reads from the first visits: no date arithmetic
    // on years the calendar does not know.
    const from = w.start === null || w.start < EARLIEST_WINDOW ? null : addDays(w.start, -TRAILING_DAYS);
    const year = from === null ? { $lte: w.end.slice(0, 4) } : { $gte: from.slice(0, 4), $lte: w.end.slice(0, 4) };
    const page = await reads.find(webVisits, { ticker: req.ticker, year }, { sort: [['year', 1]] });
    const series = seriesBetween(page.items, from ?? undefined, w.end);
    rows = socialHeat(series, w.start, w.end);
    first = series[0]?.date ?? null;
  }
  let historyFloor = w.start;
  if (historyFloor === null) historyFloor = first ?? (await firstDateOf(reads, req.ticker));
  return { rows, historyFloor };
}

/** The ticker's first web-visits date (the floor of a tier with the full history). */
async function firstDateOf(reads: ReadStore, ticker: string): Promise<string | null> {
  const page = await reads.find(webVisits, { ticker }, { sort: [['year', 1]], limit: 1 });
  return seriesBetween(page.items)[0]?.date ?? null;
}

export interface SocialHeatRowResponse {
  /** @format date */
  date: string;
  /** Social heat of the day, 0-100, 2 decimals. */
  value: number;
}

export interface SocialHeatResponse {
  ticker: string;
  /** Always `social_heat_live`. */
  metric: 'social_heat_live';
  /** A statement of the formula. */
  formula: string;
  rows: SocialHeatRowResponse[];
  /**
   * Number of rows returned (the billed quantity).
   * @isInt
   */
  count: number;
  /**
   * Effective start date after tier clamping: the requested `start` raised to your tier's floor,
   * or (no `start`) the floor itself, or on a tier with the full history the ticker's first date.
   * @format date
   */
  history_floor: string | null;
  /** Live-computation disclaimer. */
  provenance_note: string;
  /**
   * Data as-of date; `end` never goes past it. On the free tier it trails the current date by 7 days.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export const SOCIAL_HEAT_METRIC = 'social_heat_live';

export const SOCIAL_HEAT_FORMULA =
  'value(d) = visits(d) / max(visits(d), max of visits over the 365 calendar days before d) × 100, rounded to 2 decimals. The trailing window runs from d − 365 to d − 1; a day with no earlier visits in it scores 100 when visits(d) > 0, and a day whose visits and trailing maximum are both 0 scores 0.';

export const SOCIAL_HEAT_NOTE =
  'Computed live at request time from the stored daily US web-visit counts; it is not a published score and has no stored versions. A correction to the visits changes the values of every day whose 365-day window includes the corrected day, with no restatement record.';

export async function run(call: MeteredCall, ticker: string, start: string | undefined, end: string | undefined): Promise<SocialHeatResponse> {
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  const symbol = tickerFromPath(ticker);
  const v = await call.visibility();
  const { rows, historyFloor } = await getSocialHeat(call.ctx.reads, v, { ticker: symbol, start: from, end: to });
  await call.charge('social_heat', rows.length);
  return {
    ticker: symbol,
    metric: SOCIAL_HEAT_METRIC,
    formula: SOCIAL_HEAT_FORMULA,
    rows: rows.map((r) => ({ date: r.date, value: r.value })),
    count: rows.length,
    history_floor: historyFloor,
    provenance_note: SOCIAL_HEAT_NOTE,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf, ticker: symbol }),
  };
}
