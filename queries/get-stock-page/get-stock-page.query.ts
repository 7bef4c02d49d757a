import type { ReadStore } from '../../src/core/read-store.port.js';
import { entitlementsOf, type Entitlements } from '../../src/domain/plans.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { tickers, type TickerDoc } from '../../projections/reference/reference.projection.js';
import { rowOnOrBefore, rowsBetween, scoreHistory, scoreVersions, type HistoryRow, type ScoreVersion } from '../../projections/score-history/score-history.projection.js';
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
  /**
   * The date a citation names (`?as_of=`), or null for the page of the latest public day. Its
   * numbers are shown when it is on or before `asOf`; after it they are subscriber data.
   */
  cited: string | null;
  /** Whether `cited` is after `asOf`: its numbers are not public yet and the page shows none. */
  subscriberOnly: boolean;
  /** The date `cited` becomes public (cited + delay_days), when `subscriberOnly`. */
  publicFrom: string | null;
  /** The ticker's row on or before `cited` (else `asOf`): the numbers the page shows. */
  latest: HistoryRow | null;
  /**
   * The values `latest` had before its restatements, oldest first: a response served before a
   * restatement cited them, so the page shows them too, each with the interval it was current.
   */
  earlier: ScoreVersion[];
  /** Up to SPARKLINE_DAYS rows ending at `latest`, oldest first, none before the free history floor. */
  history: HistoryRow[];
  /** Whether a free API key may query this ticker (free coverage is `top100`). */
  inFreeUniverse: boolean;
  delayDays: number;
}

/** The rows of `symbol` from `start` through `end`, oldest first. */
async function rowsOf(reads: ReadStore, symbol: string, start: string, end: string): Promise<HistoryRow[]> {
  const page = await reads.find(
    scoreHistory,
    { ticker: symbol, month: { $gte: start.slice(0, 7), $lte: end.slice(0, 7) } },
    { sort: [['month', 1]] },
  );
  return rowsBetween(page.items, start, end);
}

/** The superseded versions of `row` (1 … current − 1), oldest first: exact look-ups by key. */
async function supersededVersions(reads: ReadStore, row: HistoryRow): Promise<ScoreVersion[]> {
  if (row.version <= 1) return [];
  const keys = Array.from({ length: row.version - 1 }, (_, k) => scoreVersions.key({ ticker: row.ticker, date: row.date, version: k + 1 } as ScoreVersion));
  const found = await reads.getMany(scoreVersions, keys);
  return keys.flatMap((key) => found.get(key) ?? []);
}

/**
 * Free-tier data for one listed ticker, as of the latest public day or, for a citation, as of
 * `cited`; null when no listed stock has the symbol. A cited day is shown once the free delay
 * allows it, however old: a citation stays checkable after it leaves the free history depth (the
 * chart and table stay within that depth).
 */
export async function loadStockPage(reads: ReadStore, symbol: string, now: Date, cited: string | null = null): Promise<StockPageData | null> {
  const ticker = await reads.get(tickers, symbol);
  if (!ticker) return null;
  const v = await visibilityFor(reads, PUBLIC_ENTITLEMENTS, now);
  const delayDays = PUBLIC_ENTITLEMENTS.delay_days;
  const subscriberOnly = cited !== null && (v.asOf === null || cited > v.asOf);
  const end = subscriberOnly ? null : (cited ?? v.asOf);
  let history: HistoryRow[] = [];
  let latest: HistoryRow | null = null;
  if (end !== null) {
    // SPARKLINE_DAYS trading days fit in twice as many calendar days; the floor cuts it shorter.
    let start = addDays(end, -2 * SPARKLINE_DAYS);
    if (v.floor !== null && start < v.floor) start = v.floor;
    history = start <= end ? (await rowsOf(reads, symbol, start, end)).slice(-SPARKLINE_DAYS) : [];
    latest = history.at(-1) ?? (cited !== null ? await rowOnOrBefore(reads, symbol, cited) : null);
  }
  return {
    ticker,
    asOf: v.asOf,
    cited,
    subscriberOnly,
    publicFrom: subscriberOnly && cited !== null ? addDays(cited, delayDays) : null,
    latest,
    earlier: latest ? await supersededVersions(reads, latest) : [],
    history,
    inFreeUniverse: inUniverse(v, symbol),
    delayDays,
  };
}
