import { Example, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type ThemeDetailResponse, run } from './get-theme-detail.query.js';

@Route('v1/themes')
@Tags('Discovery')
@Security('api_key', ['theme_detail'])
export class GetThemeDetailController extends MeteredController {
  /**
   * One theme with each constituent's latest scores on or before your as-of date (a late, halted
   * or delisted stock shows its last score and that score's `date`; one with no score on or before
   * as_of shows null scores). 1 credit per constituent returned. Free keys see only the constituents in their `top100` universe (and pay only for those).
   * @param slug Theme identifier from GET /v1/themes (case-insensitive).
   * @example slug "semiconductors"
   * @summary One theme with its constituents
   */
  @Get('{slug}')
  @Example<ThemeDetailResponse>({
    slug: 'semiconductors',
    name: 'Semiconductors',
    strength: 83,
    stock_count: 1,
    scored_count: 1,
    avg_main_street: 64.2,
    avg_wall_street: 71.0,
    avg_service_score: 67.3,
    constituents: [
      {
        ticker: 'NVDA',
        relationship: 'core',
        date: '2019-06-13',
        main_street: 64.2,
        wall_street: 71.0,
        service_score: 67.3,
        divergence_gap: -6.8,
      },
    ],
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'Malformed slug')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  @Response<ProblemDetails>(404, 'Unknown theme (not_found)')
  public async getTheme(@Path() slug: string, @Request() req: AuthedRequest): Promise<ThemeDetailResponse> {
    return this.serve(req, (call) => run(call, slug));
  }
}
