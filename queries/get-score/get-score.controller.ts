import { Example, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { SOURCE_STATEMENT, citationUrl } from '../shared/provenance.js';
import { tickerFromPath } from '../shared/tickers.js';
import { getScoreAsOf } from './get-score.query.js';

export interface ScoreResponse {
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
  /** main_street − wall_street; null if either is missing. */
  divergence_gap: number | null;
  /** true when the row is model-backfilled. */
  estimated: boolean;
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

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['scores'])
export class GetScoreController extends MeteredController {
  /**
   * The Main-Street / Wall-Street scores of one stock as of your as-of date: the latest published
   * day on paid tiers, the latest day on or before today − 7 days on the free tier. `date` equals
   * `as_of`. Costs 2 credits.
   * @summary Scores of one stock
   * @param ticker Stock symbol, case-insensitive, at most 12 characters. A longer value, or one with
   * characters other than letters, digits, "." and "-", names no stock: 404 `not_found`.
   * @example ticker "AAPL"
   */
  @Get('{ticker}')
  @Example<ScoreResponse>({
    ticker: 'AAPL',
    date: '2019-06-13',
    main_street: 52.4,
    wall_street: 44.2,
    service_score: 48.7,
    divergence_gap: 8.2,
    estimated: false,
    as_of: '2019-06-13',
    source: SOURCE_STATEMENT,
    citation_url: 'https://api.example.com/stocks/AAPL?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or ticker outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown ticker, or not a ticker at all (more than 12 characters)')
  public async getScore(@Path() ticker: string, @Request() req: AuthedRequest): Promise<ScoreResponse> {
    return this.serve(req, (call) => run(call, ticker));
  }
}

export async function run(call: MeteredCall, ticker: string): Promise<ScoreResponse> {
  const symbol = tickerFromPath(ticker);
  const row = await getScoreAsOf(call.ctx.reads, await call.visibility(), symbol);
  await call.charge('scores');
  return {
    ticker: symbol,
    date: row.date,
    main_street: row.main_street,
    wall_street: row.wall_street,
    service_score: row.service_score,
    divergence_gap: row.divergence_gap,
    estimated: row.estimated,
    as_of: row.date,
    source: SOURCE_STATEMENT,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: row.date, ticker: symbol }),
  };
}
