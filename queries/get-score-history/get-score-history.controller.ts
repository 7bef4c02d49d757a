import { Example, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import { parseDateParam } from '../shared/params.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { citationUrl } from '../shared/provenance.js';
import { requireOrderedDates } from '../shared/date-window.js';
import { parseInstantParam } from '../shared/instants.js';
import { tickerFromPath } from '../shared/tickers.js';
import { getScoreHistory } from './get-score-history.query.js';

export interface HistoryRowResponse {
  /** @format date */
  date: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  /** true when the row is model-backfilled. */
  estimated: boolean;
}

export interface ScoreHistoryResponse {
  ticker: string;
  rows: HistoryRowResponse[];
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
  /**
   * History methodology statement. It names the vintage served: "as published at <instant>" with
   * `as_known_at`, "as currently published" without.
   */
  provenance_note: string;
  /**
   * Echo of `as_known_at` as the instant used (ISO 8601, UTC, to the millisecond); null when none was sent.
   * @format date-time
   */
  as_known_at: string | null;
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

/** The history's `provenance_note` without `as_known_at`: the vintage served is the current one. */
export const HISTORY_NOTE =
  'Daily scores as currently published. Rows are restated deliberately when inputs are corrected; estimated rows are model backfill. Use as_known_at (or /v1/scores/history with since and restated_at) to see what was known at a given time.';

/** The history's `provenance_note`: which vintage it serves, the current one or the one published at `asKnownAt` (ISO). */
export function historyNote(asKnownAt: string | null): string {
  if (asKnownAt === null) return HISTORY_NOTE;
  return `Daily scores as published at ${asKnownAt}: rows first published later are left out, and rows restated since show the value they had then. Rows are restated deliberately when inputs are corrected; estimated rows are model backfill.`;
}

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
   * @param end Last date (YYYY-MM-DD); clamped to your as-of date; not before `start` (400 otherwise).
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
  @Response<ProblemDetails>(400, 'Malformed date or instant, or start after end')
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

export async function run(
  call: MeteredCall,
  ticker: string,
  start: string | undefined,
  end: string | undefined,
  asKnownAt: string | undefined,
): Promise<ScoreHistoryResponse> {
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  requireOrderedDates(from, to);
  const knownAt = parseInstantParam('as_known_at', asKnownAt);
  const symbol = tickerFromPath(ticker);
  const v = await call.visibility();
  const { rows, historyFloor } = await getScoreHistory(call.ctx.reads, v, { ticker: symbol, start: from, end: to, asKnownAt: knownAt });
  await call.charge('history', rows.length);
  return {
    ticker: symbol,
    rows: rows.map((r) => ({
      date: r.date,
      main_street: r.main_street,
      wall_street: r.wall_street,
      service_score: r.service_score,
      estimated: r.estimated,
    })),
    count: rows.length,
    history_floor: historyFloor,
    provenance_note: historyNote(knownAt ?? null),
    as_known_at: knownAt ?? null,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf, ticker: symbol }),
  };
}
