import type { ReadStore } from '../../src/core/read-store.port.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { earnings, tickers } from '../../projections/reference/reference.projection.js';
import { visibleCrossSection } from '../shared/cross-section.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';
import { parseIntParam } from '../../src/web/int-param.js';

export const EARNINGS_DAYS = { default: 14, min: 0, max: 60 } as const;

export interface EarningsReporter {
  /** Stock symbol. */
  ticker: string;
  /** Company name. */
  name: string;
  /**
   * Next scheduled report date.
   * @format date
   */
  next_earnings_date: string;
  /** main_street on your as-of date; null when the stock has no scores on it. */
  main_street: number | null;
  /** wall_street on your as-of date; null when unscored. */
  wall_street: number | null;
  /** service_score on your as-of date; null when unscored. */
  service_score: number | null;
}

/**
 * Stocks of the caller's universe whose next report falls in [today, today + days], by date then
 * ticker, each with its scores of the caller's as-of date going in.
 */
export async function upcomingReporters(reads: ReadStore, v: Visibility, days: number): Promise<EarningsReporter[]> {
  const until = addDays(v.today, days);
  const [scheduled, scores] = await Promise.all([
    reads.find(
      earnings,
      { date: { $gte: v.today, $lte: until } },
      {
        sort: [
          ['date', 1],
          ['ticker', 1],
        ],
      },
    ),
    visibleCrossSection(reads, v),
  ]);
  // One row per ticker: its earliest date in the window is its next report.
  const next = new Map<string, string>();
  for (const e of scheduled.items) if (inUniverse(v, e.ticker) && !next.has(e.ticker)) next.set(e.ticker, e.date);
  const names = await reads.getMany(tickers, [...next.keys()]);
  return [...next].map(([ticker, date]) => {
    const s = scores.get(ticker);
    return {
      ticker,
      name: names.get(ticker)?.company ?? ticker,
      next_earnings_date: date,
      main_street: s?.main_street ?? null,
      wall_street: s?.wall_street ?? null,
      service_score: s?.service_score ?? null,
    };
  });
}

export interface EarningsResponse {
  /** Upcoming reporters, ordered by next_earnings_date, then ticker. */
  reporters: EarningsReporter[];
  /**
   * Number of reporters.
   * @isInt
   */
  count: number;
  /**
   * Date of the scores shown.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, days: string | undefined): Promise<EarningsResponse> {
  const horizon = parseIntParam('days', days, EARNINGS_DAYS);
  const v = await call.visibility();
  const reporters = await upcomingReporters(call.ctx.reads, v, horizon);
  await call.charge('earnings');
  return { reporters, count: reporters.length, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
