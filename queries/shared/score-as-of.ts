import type { ReadStore } from '../../src/core/read-store.port.js';
import type { LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowOnOrBefore } from '../../projections/score-history/score-history.projection.js';

/**
 * A ticker's score as of `asOf`, given its latest row: that row when it is on or before `asOf`,
 * else the newest history row at or before it (the delayed view); null when it has none that early.
 * GET /v1/scores/{ticker} and the theme aggregates both read a score this way, so they always
 * show the same row.
 */
export async function scoreOnOrBefore(reads: ReadStore, latest: LatestScore, asOf: string): Promise<LatestScore | null> {
  if (latest.date <= asOf) return latest;
  const row = await rowOnOrBefore(reads, latest.ticker, asOf);
  if (!row) return null;
  const { version: _version, ...score } = row;
  return score;
}
