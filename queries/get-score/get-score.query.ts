import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { latestScores, type LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';

/** A ticker's most recent published score. */
export async function getLatestScore(reads: ReadStore, ticker: string): Promise<LatestScore> {
  const row = await reads.get(latestScores, ticker.toUpperCase());
  if (!row) throw notFound(`no scores for ticker ${ticker.toUpperCase()}`);
  return row;
}
