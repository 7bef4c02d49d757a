import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { scoreOnOrBefore } from '../shared/score-as-of.js';
import { requireVisibleTicker } from '../shared/tickers.js';
import type { Visibility } from '../shared/visibility.js';

/**
 * The ticker's score as of the caller's as-of date: its latest row on or before `v.asOf` (the
 * free tier trails 7 days). 404 for an unknown ticker (or one with nothing visible yet), 403
 * `coverage` outside the caller's universe.
 */
export async function getScoreAsOf(reads: ReadStore, v: Visibility, ticker: string): Promise<LatestScore> {
  const latest = await requireVisibleTicker(reads, v, ticker);
  if (v.asOf === null) throw notFound(`no scores published on or before ${v.cutoff} yet`);
  const score = await scoreOnOrBefore(reads, latest, v.asOf);
  if (!score) throw notFound(`no scores for ticker ${ticker} on or before ${v.asOf}`);
  return score;
}
