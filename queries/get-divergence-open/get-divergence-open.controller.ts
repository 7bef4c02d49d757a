import { Example, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type OpenDivergenceResponse, run } from './get-divergence-open.query.js';

@Route('v1/divergence/open')
@Tags('Outcomes')
@Security('api_key', ['divergence_open'])
export class GetDivergenceOpenController extends MeteredController {
  /**
   * Divergence events still open on your as-of date: where each stood when it was flagged and
   * where it stands now. Quant plan or higher; 500 credits per call.
   * @summary Open divergence extremes
   */
  @Get()
  @Example<OpenDivergenceResponse>({
    open_trades: [
      {
        ticker: 'COST',
        direction: 'bull',
        flag_date: '2019-06-03',
        flag_gap: 27.9,
        price_at_flag: 240.1,
        days_open: 8,
        current_gap: 21.4,
        current_percentile: 0.9421,
        days_at_extreme: 0,
      },
    ],
    count: 1,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  public async getOpenDivergences(@Request() req: AuthedRequest): Promise<OpenDivergenceResponse> {
    return this.serve(req, run);
  }
}
