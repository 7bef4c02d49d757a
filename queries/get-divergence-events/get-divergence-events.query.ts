import type { ReadStore } from '../../src/core/read-store.port.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { divergenceEvents, type DivergenceDirection } from '../../projections/divergence/divergence.projection.js';
import type { Visibility } from '../shared/visibility.js';

/** Most events one call returns (spec Limits). */
export const MAX_EVENTS = 2_000;
/** `since` defaults to this many calendar days before today. */
export const DEFAULT_SINCE_DAYS = 365;

export interface DivergenceEvent {
  /** Stock symbol. */
  ticker: string;
  /** `bull` (main_street above wall_street) or `bear`. */
  direction: DivergenceDirection;
  /**
   * First day of the extreme.
   * @format date
   */
  flag_date: string;
  /**
   * Day the event closed: percentile below 0.5, 60 trading days after the flag, or an opposite extreme.
   * @format date
   */
  close_date: string;
  /** Close price on flag_date (the latest earlier close if that day has none). */
  price_at_flag: number | null;
  /** Close price on close_date (the latest earlier close if that day has none). */
  price_at_close: number | null;
  /** (price_at_close / price_at_flag − 1) × 100, 2 decimals; not direction-adjusted. */
  pct_change: number | null;
  /**
   * Calendar days from flag_date to close_date.
   * @isInt
   */
  days: number;
}

/**
 * Closed events flagged on or after `since` (default: 365 days before today) and closed on or
 * before the caller's as-of date, newest flag first (ties by ticker), at most 2,000.
 */
export async function closedEvents(reads: ReadStore, v: Visibility, since: string | undefined): Promise<{ since: string; events: DivergenceEvent[] }> {
  const from = since ?? addDays(v.today, -DEFAULT_SINCE_DAYS);
  if (!v.asOf) return { since: from, events: [] };
  const page = await reads.find(
    divergenceEvents,
    { status: 'closed', flag_date: { $gte: from }, close_date: { $lte: v.asOf } },
    { sort: [['flag_date', -1], ['ticker', 1]], limit: MAX_EVENTS },
  );
  return {
    since: from,
    events: page.items.map((e) => ({
      ticker: e.ticker,
      direction: e.direction,
      flag_date: e.flag_date,
      close_date: e.close_date!,
      price_at_flag: e.price_at_flag,
      price_at_close: e.price_at_close,
      pct_change: e.pct_change,
      days: e.days!,
    })),
  };
}
