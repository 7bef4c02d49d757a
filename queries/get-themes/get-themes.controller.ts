import { Example, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type ThemesResponse, run } from './get-themes.query.js';

@Route('v1/themes')
@Tags('Discovery')
@Security('api_key', ['themes'])
export class GetThemesController extends MeteredController {
  /**
   * Theme baskets with the average scores of their constituents, each constituent counted with its
   * latest score on or before your as-of date (never a later one). 2 credits per call.
   *
   * Free keys: constituents outside the `top100` universe are left out of `tickers`,
   * `stock_count`, `scored_count` and the averages; the scores are 7 days delayed.
   * @summary List theme baskets
   */
  @Get()
  @Example<ThemesResponse>({
    themes: [
      {
        slug: 'ai-infrastructure',
        name: 'AI infrastructure',
        description: 'Compute, networking, memory, power and data-centre capacity behind AI training and inference.',
        strength: 88,
        stock_count: 2,
        tickers: ['NVDA', 'MSFT'],
        avg_main_street: 61.4,
        avg_wall_street: 58.2,
        avg_service_score: 60.1,
        scored_count: 2,
      },
    ],
    count: 1,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  public async listThemes(@Request() req: AuthedRequest): Promise<ThemesResponse> {
    return this.serve(req, run);
  }
}
