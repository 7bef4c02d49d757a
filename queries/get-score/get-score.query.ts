import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { scoreOnOrBefore } from '../shared/score-as-of.js';
import { requireVisibleTicker, tickerFromPath } from '../shared/tickers.js';
import type { Visibility } from '../shared/visibility.js';
import { scoreFieldsOf, type ScoreFields } from '../../projections/shared/score-row.js';
import type { MeteredCall } from '../shared/query-context.js';
import { SOURCE_STATEMENT, citationUrl } from '../shared/provenance.js';

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

// Redeclared fields only say what they mean in this answer.
export interface ScoreResponse extends ScoreFields {
  /** Requested symbol (upper-cased). */
  ticker: string;
  /**
   * Score date; equals `as_of`.
   * @format date
   */
  date: string;
  /** Measured consumer demand, 0-100. */
  main_street: number;
  /** Analyst sentiment, 0-100. */
  wall_street: number;
  /** Composite, 0-100. */
  service_score: number;
  /**
   * Data as-of date: the date of this row. On the free tier it trails the current date by 7 days.
   * @format date
   */
  as_of: string;
  /** A data-source statement. */
  source: string;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, ticker: string): Promise<ScoreResponse> {
  const symbol = tickerFromPath(ticker);
  const row = await getScoreAsOf(call.ctx.reads, await call.visibility(), symbol);
  await call.charge('scores');
  return {
    ...scoreFieldsOf(row),
    ticker: symbol,
    as_of: row.date,
    source: SOURCE_STATEMENT,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: row.date, ticker: symbol }),
  };
}
