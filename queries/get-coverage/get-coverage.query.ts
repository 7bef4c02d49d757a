import { eventTypesOf, type ReadModelMemo } from '../../src/core/read-model-memo.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { latestScores, latestScoresProjection } from '../../projections/latest-scores/latest-scores.projection.js';
import { referenceProjection } from '../../projections/reference/reference.projection.js';
import { rowOnOrBefore, scoreHistoryProjection } from '../../projections/score-history/score-history.projection.js';
import { compareText } from '../shared/cross-section.js';
import { crossSectionAsOf, inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseDateParam } from '../shared/params.js';
import { citationUrl } from '../shared/provenance.js';

/** Each ticker of a universe with the last score date a caller may see, sorted by ticker. */
type LastSeen = readonly (readonly [ticker: string, date: string])[];

/** What `lastSeenDates` reads is written by these projections' events only. */
const DEPENDS_ON = eventTypesOf(referenceProjection, dailyScoresProjection, latestScoresProjection, scoreHistoryProjection);

/**
 * The tickers of the caller's universe that it can see scores for, sorted; with `since`, only
 * those with a score dated on or after it (and on or before the caller's as-of date).
 *
 * The endpoint is free: the dates are built once per as-of date, universe and position of the
 * read models they come from (`memo`), and a call only filters them.
 */
export async function coveredTickers(reads: ReadStore, memo: ReadModelMemo, v: Visibility, since?: string): Promise<string[]> {
  if (v.asOf === null) return [];
  const seen = await memo.get(`coverage:${v.asOf}:${v.coverage}`, DEPENDS_ON, () => lastSeenDates(reads, v, v.asOf!));
  return seen.filter(([, date]) => since === undefined || date >= since).map(([ticker]) => ticker);
}

/**
 * A ticker's last visible score date is its latest score date, capped at the as-of date: a
 * delayed (free) key does not see a ticker whose scores only began after its as-of date.
 */
async function lastSeenDates(reads: ReadStore, v: Visibility, asOf: string): Promise<LastSeen> {
  const latest = await reads.find(latestScores, {});
  let scoredAsOf: Set<string> | undefined;
  const out: [string, string][] = [];
  for (const row of latest.items) {
    if (!inUniverse(v, row.ticker)) continue;
    let lastSeen: string | null = row.date;
    if (row.date > asOf) {
      // Newer than the caller may see: what was its last score on or before the as-of date?
      scoredAsOf ??= new Set((await crossSectionAsOf(reads, v))?.tickers);
      lastSeen = scoredAsOf.has(row.ticker) ? asOf : await lastScoreOnOrBefore(reads, row.ticker, asOf);
    }
    if (lastSeen !== null) out.push([row.ticker, lastSeen]);
  }
  return out.sort((a, b) => compareText(a[0], b[0]));
}

/** Rare path (a ticker not scored on the as-of date): look in its history buckets. */
async function lastScoreOnOrBefore(reads: ReadStore, ticker: string, date: string): Promise<string | null> {
  return (await rowOnOrBefore(reads, ticker, date))?.date ?? null;
}

export interface CoverageResponse {
  /** Symbols you can query, sorted. */
  tickers: string[];
  /**
   * Number of tickers.
   * @isInt
   */
  count: number;
  /** The universe this key sees: `all` or `top100`. */
  coverage: 'all' | 'top100';
  /**
   * Echo of the `since` filter; null when absent.
   * @format date
   */
  since: string | null;
  /**
   * Data as-of date (free keys trail 7 days).
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, since: string | undefined): Promise<CoverageResponse> {
  const from = parseDateParam('since', since);
  const v = await call.visibility();
  const tickers = await coveredTickers(call.ctx.reads, call.ctx.memo, v, from);
  await call.charge('coverage');
  return {
    tickers,
    count: tickers.length,
    coverage: v.coverage,
    since: from ?? null,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }),
  };
}
