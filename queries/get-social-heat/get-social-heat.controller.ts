import { Example, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type SocialHeatResponse, SOCIAL_HEAT_FORMULA, SOCIAL_HEAT_NOTE, run } from './get-social-heat.query.js';

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['social_heat'])
export class GetSocialHeatController extends MeteredController {
  /**
   * Daily social heat of one stock, oldest first: each trading day's US web visits as a percentage
   * of the highest of that day and the trailing 365 calendar days (see `formula`). Computed live
   * from the stored visits. Costs 1 credit per row returned (an empty answer is free).
   *
   * Dates outside your window are clamped silently, as for the score history: `start` is raised to
   * your tier's history floor (today − the tier's history days; reported as `history_floor`) and
   * `end` is lowered to your as-of date. The trailing window of the first rows may reach before the
   * floor: the floor limits the rows returned, not the visits they are computed from. Only the dates
   * as sent are checked: `start` after `end` is 400. A window that clamping leaves empty (a free
   * key asking from a `start` after its as-of date) is a 200 with no rows, free.
   * @summary Social heat series of one stock
   * @param ticker Stock symbol, case-insensitive, at most 12 characters.
   * @param start First date (YYYY-MM-DD); clamped silently to your tier's history floor.
   * @param end Last date (YYYY-MM-DD); clamped to your as-of date. Before `start` the window is empty: no rows, no credits.
   * @example ticker "AAPL"
   */
  @Get('social-heat/{ticker}')
  @Example<SocialHeatResponse>({
    ticker: 'AAPL',
    metric: 'social_heat_live',
    formula: SOCIAL_HEAT_FORMULA,
    rows: [
      { date: '2019-06-12', value: 81.37 },
      { date: '2019-06-13', value: 100 },
    ],
    count: 2,
    history_floor: '2019-06-12',
    provenance_note: SOCIAL_HEAT_NOTE,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/stocks/AAPL?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'Malformed date')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or ticker outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown ticker')
  public async getSocialHeat(
    @Path() ticker: string,
    @Request() req: AuthedRequest,
    @Query() start?: string,
    @Query() end?: string,
  ): Promise<SocialHeatResponse> {
    return this.serve(req, (call) => run(call, ticker, start, end));
  }
}
