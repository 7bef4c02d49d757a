import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type EarningsResponse, run } from './get-earnings.query.js';

@Route('v1/earnings')
@Tags('Discovery')
@Security('api_key', ['earnings'])
export class GetEarningsController extends MeteredController {
  /**
   * Stocks reporting earnings in the next `days` days (today included), with their current
   * scores going in. Builder plan or higher; 100 credits per call.
   * @param days Integer 0-60 (default 14): the horizon in calendar days (0 = today only); above 60 is a 422.
   * @summary Upcoming earnings reporters
   */
  @Get()
  @Example<EarningsResponse>({
    reporters: [
      { ticker: 'ORCL', name: 'Oracle Corp.', next_earnings_date: '2019-06-19', main_street: 52.3, wall_street: 61.8, service_score: 56.0 },
    ],
    count: 1,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'days is not an integer or is negative')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below builder (tier)')
  @Response<ProblemDetails>(422, 'days above 60 (limit_exceeded)')
  public async getUpcomingEarnings(@Request() req: AuthedRequest, @Query() days?: string): Promise<EarningsResponse> {
    return this.serve(req, (call) => run(call, days));
  }
}
