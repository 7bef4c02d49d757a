import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { SOURCE_STATEMENT } from '../shared/provenance.js';
import { type ScreenerResponse, run } from './get-screener.query.js';

@Route('v1/screener')
@Tags('Discovery')
@Security('api_key', ['screener'])
export class GetScreenerController extends MeteredController {
  /**
   * The whole universe you can see, ranked by `service_score` descending, as of your as-of date.
   * Free keys see the `top100` universe, 7 days delayed. Costs 2 credits per row returned
   * (an empty answer is free).
   * @param min_score Integer 0-100: only rows with `service_score` at or above it.
   * @param limit Integer 1-650 (default 100): the most rows to return; above 650 is a 422.
   * @summary Rank stocks by service_score
   */
  @Get()
  @Example<ScreenerResponse>({
    rows: [{ ticker: 'COST', date: '2019-06-13', main_street: 81.2, wall_street: 74.5, service_score: 78.9, divergence_gap: 6.7 }],
    count: 1,
    as_of: '2019-06-13',
    source: SOURCE_STATEMENT,
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'limit or min_score is not an integer, limit below 1, or min_score outside 0-100')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  @Response<ProblemDetails>(422, 'limit above 650 (limit_exceeded)')
  public async screenStocks(@Request() req: AuthedRequest, @Query() min_score?: string, @Query() limit?: string): Promise<ScreenerResponse> {
    return this.serve(req, (call) => run(call, min_score, limit));
  }
}
