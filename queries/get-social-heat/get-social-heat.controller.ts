import { Example, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import { parseDateParam } from '../shared/params.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { citationUrl } from '../shared/provenance.js';
import { requireOrderedDates } from '../shared/date-window.js';
import { tickerFromPath } from '../shared/tickers.js';
import { getSocialHeat } from './get-social-heat.query.js';

export interface SocialHeatRowResponse {
  /** @format date */
  date: string;
  /** Social heat of the day, 0-100, 2 decimals. */
  value: number;
}

export interface SocialHeatResponse {
  ticker: string;
  /** Always `social_heat_live`. */
  metric: 'social_heat_live';
  /** A statement of the formula. */
  formula: string;
  rows: SocialHeatRowResponse[];
  /**
   * Number of rows returned (the billed quantity).
   * @isInt
   */
  count: number;
  /**
   * Effective start date after tier clamping: the requested `start` raised to your tier's floor,
   * or (no `start`) the floor itself, or on a tier with the full history the ticker's first date.
   * @format date
   */
  history_floor: string | null;
  /** Live-computation disclaimer. */
  provenance_note: string;
  /**
   * Data as-of date; `end` never goes past it. On the free tier it trails the current date by 7 days.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export const SOCIAL_HEAT_METRIC = 'social_heat_live';

export const SOCIAL_HEAT_FORMULA =
  'value(d) = visits(d) / max(visits(d), max of visits over the 365 calendar days before d) × 100, rounded to 2 decimals. The trailing window runs from d − 365 to d − 1; a day with no earlier visits in it scores 100 when visits(d) > 0, and a day whose visits and trailing maximum are both 0 scores 0.';

export const SOCIAL_HEAT_NOTE =
  'Computed live at request time from the stored daily US web-visit counts; it is not a published score and has no stored versions. A correction to the visits changes the values of every day whose 365-day window includes the corrected day, with no restatement record.';

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
   * @param end Last date (YYYY-MM-DD); clamped to your as-of date; not before `start` (400 otherwise).
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
  @Response<ProblemDetails>(400, 'Malformed date, or start after end')
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

export async function run(call: MeteredCall, ticker: string, start: string | undefined, end: string | undefined): Promise<SocialHeatResponse> {
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  requireOrderedDates(from, to);
  const symbol = tickerFromPath(ticker);
  const v = await call.visibility();
  const { rows, historyFloor } = await getSocialHeat(call.ctx.reads, v, { ticker: symbol, start: from, end: to });
  await call.charge('social_heat', rows.length);
  return {
    ticker: symbol,
    metric: SOCIAL_HEAT_METRIC,
    formula: SOCIAL_HEAT_FORMULA,
    rows: rows.map((r) => ({ date: r.date, value: r.value })),
    count: rows.length,
    history_floor: historyFloor,
    provenance_note: SOCIAL_HEAT_NOTE,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf, ticker: symbol }),
  };
}
