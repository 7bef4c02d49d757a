import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type CoverageResponse, run } from './get-coverage.query.js';

@Route('v1/coverage')
@Tags('Discovery')
@Security('api_key', ['coverage'])
export class GetCoverageController extends MeteredController {
  /**
   * The tickers your key can see scores for. Free. Replaces the older charts endpoint
   * `/charts/v1/companies/with-social-heat-score`.
   * @param since Date YYYY-MM-DD: only tickers with a score dated on or after it (up to your as-of date).
   * @summary Tickers your key can see
   */
  @Get()
  @Example<CoverageResponse>({
    tickers: ['AAPL', 'AMZN', 'MSFT'],
    count: 3,
    coverage: 'top100',
    since: null,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'since is not a date YYYY-MM-DD')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  public async getCoverage(@Request() req: AuthedRequest, @Query() since?: string): Promise<CoverageResponse> {
    return this.serve(req, (call) => run(call, since));
  }
}
