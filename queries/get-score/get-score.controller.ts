import { Example, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { SOURCE_STATEMENT } from '../shared/provenance.js';
import { type ScoreResponse, run } from './get-score.query.js';

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
