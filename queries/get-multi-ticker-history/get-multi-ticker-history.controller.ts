import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type MultiTickerHistoryResponse, run } from './get-multi-ticker-history.query.js';

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['multi_history'])
export class GetMultiTickerHistoryController extends MeteredController {
  /**
   * Score history of many tickers in one call, ordered by ticker then date. Costs 1 credit per row
   * returned (`count`), the single-ticker history rate (an empty answer is free).
   *
   * Incremental sync: every answer carries `next_since`. Send it back as `since` and the answer
   * holds exactly the rows written (first published or restated) after the previous answer, over
   * your whole window, plus the rows that entered the window since (its end is your as-of date,
   * which on the free tier trails today by 7 days: a row shows up when its date reaches your as-of
   * date). Each row version comes once, never twice and never missed, even when rows are written
   * in the same second as your call; a row restated twice between two calls comes once, with its
   * latest value. Upsert the rows by ticker and date, store `next_since`, and call again later with
   * it (and the same `tickers`, `start` and `end`). When `has_more` is true, call again at once.
   * An empty answer is free and still moves `next_since`.
   *
   * A plain `since` (a date, an ISO instant or a `restated_at` value) keeps only the rows written at
   * or after that instant (inclusive: rows of that very second come again); use it to start a loop
   * from a copy you already hold, then continue with `next_since`.
   *
   * Point in time: with `as_known_at`, each row is returned as it was published at that instant.
   * Rows first published later are absent, and a row restated later shows the value (and
   * `restated_at`) that was current then. Scores are restated deliberately when inputs are
   * corrected, so today's history of a past day can differ from what anyone could have known on
   * that day. A backtest that trades on the corrected values has look-ahead bias; replaying each
   * decision with `as_known_at` set to its decision time avoids it. With both, `since` filters the
   * rows as known at `as_known_at`; with a cursor, a row comes when its value as known at that
   * instant changes (a restatement made after the instant changes nothing there). The instant used
   * is echoed as `as_known_at`.
   *
   * Dates outside your window are clamped silently and never refused: `start` is raised to your
   * tier's history floor and `end` lowered to your as-of date (both echoed as the effective window).
   * Only the dates as sent are checked: `start` after `end` is 400. A window that clamping leaves
   * empty (a free key asking from a `start` after its as-of date) is a 200 with no rows, free.
   *
   * At most 200,000 rows per call: a broader query is refused with 422 `limit_exceeded` and
   * charged nothing. Split it by tickers or dates, or sync with `since`. With a cursor, a larger
   * change set is not refused: it comes in pages (`has_more`).
   * @summary Score history of many stocks, with incremental sync
   * @param tickers Comma-separated symbols, case-insensitive, at most 50. When omitted, everything
   * your key can see (your coverage). Unknown symbols: 404 naming them; symbols outside your coverage: 403.
   * @param start First date (YYYY-MM-DD); floored at your tier's history depth.
   * @param end Last date (YYYY-MM-DD); capped at your as-of date. Before `start` the window is empty: no rows, no credits.
   * @param since The `next_since` of your previous answer: only what was written or entered your
   * window after it (see above). Or a plain lower bound on when rows were written (inclusive): a
   * date YYYY-MM-DD (00:00 UTC), an ISO 8601 instant with a zone, or a `restated_at` value
   * (YYYY-MM-DD HH:MM:SS, UTC).
   * @param asKnownAt An instant: a date-time with a zone such as 2024-05-01T21:00:00Z, a date
   * YYYY-MM-DD (00:00 UTC), or a `restated_at` value (YYYY-MM-DD HH:MM:SS, UTC): return each row
   * as it was published at that instant (see above). Echoed as `as_known_at`.
   */
  @Get('history')
  @Example<MultiTickerHistoryResponse>({
    rows: [
      {
        ticker: 'AAPL',
        date: '2019-06-07',
        main_street: 53,
        wall_street: 44.8,
        service_score: 49.3,
        divergence_gap: 8.2,
        estimated: false,
        restated_at: '2019-06-10 03:54:41',
      },
      {
        ticker: 'AAPL',
        date: '2019-06-13',
        main_street: 52.4,
        wall_street: 44.2,
        service_score: 48.7,
        divergence_gap: 8.2,
        estimated: false,
        restated_at: '2019-06-13 22:00:00',
      },
    ],
    count: 2,
    tickers: 1,
    start: '2019-01-02',
    end: '2019-06-13',
    since: '2019-06-09 00:00:00',
    next_since: 'c1_MTc0Mn4yMDE5LTA2LTEzfmI3OTExODc4',
    has_more: false,
    as_known_at: null,
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(
    400,
    'Malformed tickers, date or instant; more than 50 tickers (bad_request), or a since cursor altered or ahead of the data (cursor_invalid)',
  )
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or tickers outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown tickers (listed in unknown_tickers)')
  @Response<ProblemDetails>(422, 'The query returns more rows than one call returns (limit_exceeded)')
  public async getMultiTickerHistory(
    @Request() req: AuthedRequest,
    @Query() tickers?: string,
    @Query() start?: string,
    @Query() end?: string,
    @Query() since?: string,
    @Query('as_known_at') asKnownAt?: string,
  ): Promise<MultiTickerHistoryResponse> {
    return this.serve(req, (call) => run(call, tickers, start, end, since, asKnownAt));
  }
}
