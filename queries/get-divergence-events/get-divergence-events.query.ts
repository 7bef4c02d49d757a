import type { ReadStore } from '../../src/core/read-store.port.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { divergenceEvents, type DivergenceDirection } from '../../projections/divergence/divergence.projection.js';
import type { Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { badRequest } from '../../src/core/errors.js';
import { parseDateParam } from '../shared/params.js';
import { citationUrl } from '../shared/provenance.js';

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

export interface DivergenceEventsResponse {
  /** Closed divergence events, newest flag_date first, at most 2,000. */
  events: DivergenceEvent[];
  /**
   * Number of events returned.
   * @isInt
   */
  count: number;
  /**
   * The flag_date floor applied (your `since`, or 365 days before today).
   * @format date
   */
  since: string;
  /**
   * Data as-of date: events closed on or before it are listed.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, since: string | undefined): Promise<DivergenceEventsResponse> {
  const from = parseSince(since);
  const v = await call.visibility();
  const result = await closedEvents(call.ctx.reads, v, from);
  await call.charge('divergence_events');
  return {
    events: result.events,
    count: result.events.length,
    since: result.since,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }),
  };
}

/**
 * `since` as a real date. parseDateParam throws a RangeError (a 500) on an impossible date such as
 * 2019-13-01, so such values are refused here first.
 */
function parseSince(value: string | undefined): string | undefined {
  if (value !== undefined && Number.isNaN(Date.parse(`${value}T00:00:00Z`))) {
    throw badRequest('since must be a date YYYY-MM-DD', { errors: [{ parameter: 'since', message: 'must be a date YYYY-MM-DD' }] });
  }
  return parseDateParam('since', value);
}
