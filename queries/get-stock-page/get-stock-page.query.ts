import type { ReadStore } from '../../src/core/read-store.port.js';
import { entitlementsOf, type Entitlements } from '../../src/domain/plans.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { tickers, type TickerDoc } from '../../projections/reference/reference.projection.js';
import { rowsBetween, scoreHistory, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { inUniverse, visibilityFor } from '../shared/visibility.js';

/**
 * The public page shows what a free key would see, never more: it is public because it is
 * delayed. Reading the free plan's row (not a copy of its numbers) keeps the two in step.
 */
export const PUBLIC_ENTITLEMENTS: Readonly<Entitlements> = Object.freeze(entitlementsOf('free', false));

/** How many of the latest visible trading days the page charts. */
export const SPARKLINE_DAYS = 60;

export interface StockPageData {
  ticker: TickerDoc;
  /** The free tier's as-of date: the latest score date on or before today − delay_days. */
  asOf: string | null;
  /** The ticker's row on or before `asOf` (its own latest visible row). */
  latest: HistoryRow | null;
  /** Up to SPARKLINE_DAYS rows ending at `latest`, oldest first, none before the free history floor. */
  history: HistoryRow[];
  /** Whether a free API key may query this ticker (free coverage is `top100`). */
  inFreeUniverse: boolean;
  delayDays: number;
}

/** Free-tier data for one listed ticker; null when no listed stock has the symbol. */
export async function loadStockPage(reads: ReadStore, symbol: string, now: Date): Promise<StockPageData | null> {
  const ticker = await reads.get(tickers, symbol);
  if (!ticker) return null;
  const v = await visibilityFor(reads, PUBLIC_ENTITLEMENTS, now);
  let history: HistoryRow[] = [];
  if (v.asOf) {
    // SPARKLINE_DAYS trading days fit in twice as many calendar days; the floor cuts it shorter.
    let start = addDays(v.asOf, -2 * SPARKLINE_DAYS);
    if (v.floor !== null && start < v.floor) start = v.floor;
    const page = await reads.find(
      scoreHistory,
      { ticker: symbol, month: { $gte: start.slice(0, 7), $lte: v.asOf.slice(0, 7) } },
      { sort: [['month', 1]] },
    );
    history = rowsBetween(page.items, start, v.asOf).slice(-SPARKLINE_DAYS);
  }
  return {
    ticker,
    asOf: v.asOf,
    latest: history.at(-1) ?? null,
    history,
    inFreeUniverse: inUniverse(v, symbol),
    delayDays: PUBLIC_ENTITLEMENTS.delay_days,
  };
}
