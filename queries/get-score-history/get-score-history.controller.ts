import { Example, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type ScoreHistoryResponse, HISTORY_NOTE, run } from './get-score-history.query.js';

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['history'])
export class GetScoreHistoryController extends MeteredController {
  /**
   * Daily score history of one stock, oldest first. Costs 1 credit per row returned (an empty
   * answer is free).
   *
   * Dates outside your window are clamped silently and never refused: `start` is raised to your
   * tier's history floor (today − the tier's history days; reported as `history_floor`) and `end`
   * is lowered to your as-of date (`as_of`). Only the dates as sent are checked: `start` after
   * `end` is 400. A window that clamping leaves empty (a free key asking from a `start` after its
   * as-of date) is a 200 with no rows, free.
   *
   * Point in time: with `as_known_at`, each row is returned as it was published at that instant.
   * Rows first published later are absent, and a row restated later shows the value that was
   * current then. Scores are restated deliberately when inputs are corrected, so today's history
   * of a past day can differ from what anyone could have known on that day. A backtest that trades
   * on the corrected values has look-ahead bias; replaying each decision with `as_known_at` set to
   * its decision time avoids it. The instant used is echoed as `as_known_at`, and
   * `provenance_note` names the vintage served.
   * @summary Score history of one stock
   * @param ticker Stock symbol, case-insensitive, at most 12 characters.
   * @param start First date (YYYY-MM-DD); clamped silently to your tier's history floor.
   * @param end Last date (YYYY-MM-DD); clamped to your as-of date. Before `start` the window is empty: no rows, no credits.
   * @param asKnownAt An instant: a date-time with a zone such as 2024-05-01T21:00:00Z, a date
   * YYYY-MM-DD (00:00 UTC), or a `restated_at` value (YYYY-MM-DD HH:MM:SS, UTC): return each row
   * as it was published at that instant (see above).
   * @example ticker "AAPL"
   */
  @Get('{ticker}/history')
  @Example<ScoreHistoryResponse>({
    ticker: 'AAPL',
    rows: [
      { date: '2019-06-12', main_street: 52.3, wall_street: 45.7, service_score: 49.3, estimated: false },
      { date: '2019-06-13', main_street: 52.4, wall_street: 44.2, service_score: 48.7, estimated: false },
    ],
    count: 2,
    history_floor: '2019-06-12',
    provenance_note: HISTORY_NOTE,
    as_known_at: null,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/stocks/AAPL?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'Malformed date or instant')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or ticker outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown ticker')
  public async getScoreHistory(
    @Path() ticker: string,
    @Request() req: AuthedRequest,
    @Query() start?: string,
    @Query() end?: string,
    @Query('as_known_at') asKnownAt?: string,
  ): Promise<ScoreHistoryResponse> {
    return this.serve(req, (call) => run(call, ticker, start, end, asKnownAt));
  }
}
