import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type SignalsResponse, run } from './get-signals.query.js';

@Route('v1/signals')
@Tags('Discovery')
@Security('api_key', ['signals'])
export class GetSignalsController extends MeteredController {
  /**
   * The latest research signals, newest first. 2 credits per call.
   *
   * Free keys see signals delayed like their data (created on or before the end of their as-of
   * date) and only signals whose tickers are all inside their `top100` universe.
   * @param limit Integer 1-200 (default 50): the most signals to return; above 200 is a 422.
   * @summary Latest research signals
   */
  @Get()
  @Example<SignalsResponse>({
    signals: [
      {
        id: 42,
        alert_type: 'demand_surge',
        content: 'Main Street demand for COST jumped 6.1 points over 5 sessions to 78.4 while Wall Street sentiment held at 70.2.',
        tickers: ['COST'],
        themes: ['value-retail'],
        created_at: '2019-06-13 22:15:00',
      },
    ],
    count: 1,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'limit is not an integer or below 1')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  @Response<ProblemDetails>(422, 'limit above 200 (limit_exceeded)')
  public async getSignals(@Request() req: AuthedRequest, @Query() limit?: string): Promise<SignalsResponse> {
    return this.serve(req, (call) => run(call, limit));
  }
}
