import type { ReadStore } from '../../src/core/read-store.port.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { directionName, divergenceDays, divergenceEvents, scoredCells, type DivergenceDirection } from '../../projections/divergence/divergence.projection.js';
import { compareText } from '../shared/cross-section.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';

export interface OpenDivergenceTrade {
  /** Stock symbol. */
  ticker: string;
  /** `bull` or `bear`. */
  direction: DivergenceDirection;
  /**
   * First day of the extreme that opened the event.
   * @format date
   */
  flag_date: string;
  /** gap on flag_date. */
  flag_gap: number;
  /** Close price on flag_date (the latest earlier close if that day has none). */
  price_at_flag: number | null;
  /**
   * Trading days since flag_date (0 on the flag day).
   * @isInt
   */
  days_open: number;
  /** gap on the as-of date (the latest scored day of the stock). */
  current_gap: number;
  /** percentile on the as-of date. */
  current_percentile: number;
  /**
   * Consecutive days at an extreme in the current direction (0 once the extreme has eased).
   * @isInt
   */
  days_at_extreme: number;
}

/** Events open on the caller's as-of date, newest flag first (ties by ticker). */
export async function openTrades(reads: ReadStore, v: Visibility): Promise<OpenDivergenceTrade[]> {
  if (!v.asOf) return [];
  const [day, scores] = await Promise.all([reads.get(divergenceDays, v.asOf), reads.get(dailyScores, v.asOf)]);
  if (!day || !scores) return [];
  const open = [...Object.entries(scoredCells(day, scores)), ...Object.entries(day.carried)].filter(([t, c]) => c[4] !== null && inUniverse(v, t));
  const docs = await reads.getMany(
    divergenceEvents,
    open.map(([t, c]) => `${t}|${c[4]}`),
  );
  return open
    .map(([t, c]): OpenDivergenceTrade => {
      const e = docs.get(`${t}|${c[4]}`);
      return {
        ticker: t,
        direction: directionName(c[5]),
        flag_date: c[4]!,
        flag_gap: e?.flag_gap ?? c[0],
        price_at_flag: e?.price_at_flag ?? null,
        days_open: c[6],
        current_gap: c[0],
        current_percentile: c[1],
        days_at_extreme: c[2],
      };
    })
    .sort((a, b) => compareText(b.flag_date, a.flag_date) || compareText(a.ticker, b.ticker));
}

export interface OpenDivergenceResponse {
  /** Divergence events open on the as-of date, newest flag_date first. */
  open_trades: OpenDivergenceTrade[];
  /**
   * Number of open trades.
   * @isInt
   */
  count: number;
  /**
   * Data as-of date.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall): Promise<OpenDivergenceResponse> {
  const v = await call.visibility();
  const trades = await openTrades(call.ctx.reads, v);
  await call.charge('divergence_open');
  return { open_trades: trades, count: trades.length, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
