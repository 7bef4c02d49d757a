import type { ReadStore } from '../../src/core/read-store.port.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowOnOrBefore } from '../../projections/score-history/score-history.projection.js';
import { compareText } from '../shared/cross-section.js';
import { crossSectionAsOf, inUniverse, type Visibility } from '../shared/visibility.js';

/**
 * The tickers of the caller's universe that it can see scores for, sorted; with `since`, only
 * those with a score dated on or after it (and on or before the caller's as-of date).
 *
 * A ticker's last visible score date is its latest score date, capped at the as-of date: a
 * delayed (free) key does not see a ticker whose scores only began after its as-of date.
 */
export async function coveredTickers(reads: ReadStore, v: Visibility, since?: string): Promise<string[]> {
  if (v.asOf === null) return [];
  const asOf = v.asOf;
  const latest = await reads.find(latestScores, {});
  let scoredAsOf: Set<string> | undefined;
  const out: string[] = [];
  for (const row of latest.items) {
    if (!inUniverse(v, row.ticker)) continue;
    let lastSeen: string | null = row.date;
    if (row.date > asOf) {
      // Newer than the caller may see: what was its last score on or before the as-of date?
      scoredAsOf ??= new Set((await crossSectionAsOf(reads, v))?.tickers);
      lastSeen = scoredAsOf.has(row.ticker) ? asOf : await lastScoreOnOrBefore(reads, row.ticker, asOf);
    }
    if (lastSeen !== null && (since === undefined || lastSeen >= since)) out.push(row.ticker);
  }
  return out.sort(compareText);
}

/** Rare path (a ticker not scored on the as-of date): look in its history buckets. */
async function lastScoreOnOrBefore(reads: ReadStore, ticker: string, date: string): Promise<string | null> {
  return (await rowOnOrBefore(reads, ticker, date))?.date ?? null;
}
