import { Example, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type TrackRecordResponse, run } from './get-track-record.query.js';

@Route('v1/track-record')
@Tags('Outcomes')
@Security('api_key', ['track_record'])
export class GetTrackRecordController extends MeteredController {
  /**
   * The public model portfolio's closed trades: long each bull divergence event and short each
   * bear one, from its flag to its close, with aggregates (win rate, mean and median return,
   * average days held, best and worst). Returns are direction-adjusted percents. Free.
   * @summary Model-portfolio track record
   */
  @Get()
  @Example<TrackRecordResponse>({
    closed_trades: 1,
    win_rate: 1,
    avg_return_pct: 5.5,
    median_return_pct: 5.5,
    avg_days_held: 49,
    best_return_pct: 5.5,
    worst_return_pct: 5.5,
    trades: [
      {
        ticker: 'COST',
        direction: 'long',
        entry_date: '2019-03-04',
        exit_date: '2019-04-22',
        entry_price: 231.4,
        exit_price: 244.12,
        return_pct: 5.5,
        days_held: 49,
        win: true,
      },
    ],
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  public async getTrackRecord(@Request() req: AuthedRequest): Promise<TrackRecordResponse> {
    return this.serve(req, run);
  }
}
