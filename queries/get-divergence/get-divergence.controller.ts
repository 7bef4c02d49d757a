import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type DivergenceResponse, run } from './get-divergence.query.js';

@Route('v1/divergence')
@Tags('Discovery')
@Security('api_key', ['divergence'])
export class GetDivergenceController extends MeteredController {
  /**
   * The widest gaps between main_street and wall_street on your as-of date, ranked by |gap|.
   * `percentile` is the rank of |gap| in that day's whole cross-section; `days_at_extreme`
   * counts consecutive days at percentile ≥ 0.95 in one direction. Builder keys and higher also
   * get `why_now` research. Costs 3 credits per row returned (an empty answer is free).
   * @param direction `bull` (main_street above wall_street) or `bear` (below), any case; `null` or absent = both.
   * @param limit Integer 1-100 (default 25): the most rows to return; above 100 is a 422.
   * @summary Widest divergence gaps
   */
  @Get()
  @Example<DivergenceResponse>({
    rows: [
      {
        ticker: 'COST',
        company: 'Costco Wholesale Corp.',
        main_street: 81.2,
        wall_street: 52.5,
        gap: 28.7,
        percentile: 0.9981,
        days_at_extreme: 4,
        why_now: 'COST has main_street 81.2 against wall_street 52.5 on 2019-06-13: a gap of +28.7, …',
        why_now_headline: 'COST: bull gap +28.7 (top 1%), 4d at extreme',
      },
    ],
    count: 1,
    why_now_included: true,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'direction is not bull, bear or null, or limit is not an integer or below 1')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  @Response<ProblemDetails>(422, 'limit above 100 (limit_exceeded)')
  public async getDivergences(@Request() req: AuthedRequest, @Query() direction?: string, @Query() limit?: string): Promise<DivergenceResponse> {
    return this.serve(req, (call) => run(call, direction, limit));
  }
}
