import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type DivergenceEventsResponse, run } from './get-divergence-events.query.js';

@Route('v1/divergence/events')
@Tags('Outcomes')
@Security('api_key', ['divergence_events'])
export class GetDivergenceEventsController extends MeteredController {
  /**
   * Closed divergence events with their dated outcome: the close price on the flag date and on
   * the close date, the percent change between them and the calendar days in between. An event
   * opens on the first day of an extreme (percentile ≥ 0.95) and closes when the percentile falls
   * below 0.5, after 60 trading days, or when an extreme of the opposite direction starts.
   * Quant plan or higher; 10 credits per call.
   * @param since Date YYYY-MM-DD: only events flagged on or after it (default 365 days before today).
   * @summary Closed divergence events with outcomes
   */
  @Get()
  @Example<DivergenceEventsResponse>({
    events: [
      {
        ticker: 'COST',
        direction: 'bull',
        flag_date: '2019-03-04',
        close_date: '2019-04-22',
        price_at_flag: 231.4,
        price_at_close: 244.12,
        pct_change: 5.5,
        days: 49,
      },
    ],
    count: 1,
    since: '2018-06-14',
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'since is not a date YYYY-MM-DD')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  public async getDivergenceEvents(@Request() req: AuthedRequest, @Query() since?: string): Promise<DivergenceEventsResponse> {
    return this.serve(req, (call) => run(call, since));
  }
}
