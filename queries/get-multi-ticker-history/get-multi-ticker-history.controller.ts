import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/core/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import { parseDateParam } from '../shared/params.js';
import type { ProblemDetails } from '../../src/core/problem.js';
import { citationUrl } from '../shared/provenance.js';
import { requireOrderedDates } from '../shared/date-window.js';
import { parseInstantParam, timestampOf } from '../shared/instants.js';
import { parseTickerList } from '../shared/tickers.js';
import { getMultiTickerHistory } from './get-multi-ticker-history.query.js';

export interface MultiTickerHistoryRow {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  /** main_street − wall_street; null if either is missing. */
  divergence_gap: number | null;
  /** true when the row is model-backfilled. */
  estimated: boolean;
  /**
   * When the row was last written (first publication or latest restatement), `YYYY-MM-DD HH:MM:SS`
   * UTC. Compare it with your stored copy to detect corrections.
   */
  restated_at: string;
}

export interface MultiTickerHistoryResponse {
  /** Ordered by ticker, then date. */
  rows: MultiTickerHistoryRow[];
  /** Number of rows returned: the billed quantity. */
  count: number;
  /** Number of distinct tickers among the rows. */
  tickers: number;
  /** Effective first date, after flooring at your tier's history depth. */
  start: string | null;
  /** Effective last date, after capping at your as-of date. */
  end: string | null;
  /** Echo of the `since` filter; null when none was sent. */
  since: string | null;
  /** Data as-of date. On the free tier it trails the current date by 7 days. */
  as_of: string | null;
  /** Canonical page to cite. */
  citation_url: string;
}

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['multi_history'])
export class GetMultiTickerHistoryController extends MeteredController {
  /**
   * Score history of many tickers in one call, ordered by ticker then date. Costs 1 credit per row
   * returned (`count`), the single-ticker history rate (an empty answer is free).
   *
   * Incremental sync: `since` keeps only the rows written at or after that instant, whether new or
   * restated, and each row's `restated_at` says when it was last written. Send back the latest
   * `restated_at` you hold (the filter is inclusive, so rows of that very second come again:
   * upsert by ticker and date) to fetch exactly what changed, over your whole history window,
   * without downloading it again.
   *
   * Point in time: with `as_known_at`, each row is returned as it was published at that instant.
   * Rows first published later are absent, and a row restated later shows the value (and
   * `restated_at`) that was current then. Scores are restated deliberately when inputs are
   * corrected, so today's history of a past day can differ from what anyone could have known on
   * that day. A backtest that trades on the corrected values has look-ahead bias; replaying each
   * decision with `as_known_at` set to its decision time avoids it. With both, `since` filters the
   * rows as known at `as_known_at`.
   *
   * At most 200,000 rows per call: a broader query is refused with 422 `limit_exceeded` and
   * charged nothing. Split it by tickers or dates, or sync with `since`.
   * @summary Score history of many stocks, with incremental sync
   * @param tickers Comma-separated symbols, case-insensitive, at most 50. When omitted, everything
   * your key can see (your coverage). Unknown symbols: 404 naming them; symbols outside your coverage: 403.
   * @param start First date (YYYY-MM-DD); floored at your tier's history depth.
   * @param end Last date (YYYY-MM-DD); capped at your as-of date.
   * @param since Only rows written (first published or restated) at or after this instant: a date
   * YYYY-MM-DD (00:00 UTC), an ISO 8601 instant, or a `restated_at` value (YYYY-MM-DD HH:MM:SS, UTC).
   * @param asKnownAt An instant (ISO 8601 such as 2024-05-01T21:00:00Z, or YYYY-MM-DD for 00:00 UTC):
   * return each row as it was published at that instant (see above).
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
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs',
  })
  @Response<ProblemDetails>(400, 'Malformed tickers, date or instant; more than 50 tickers; start after end')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or tickers outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown tickers (listed in unknown_tickers)')
  @Response<ProblemDetails>(422, 'The query returns more rows than one call returns (limit_exceeded)')
  @Response<ProblemDetails>(429, 'Credits exhausted')
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

export async function run(
  call: MeteredCall,
  tickers: string | undefined,
  start: string | undefined,
  end: string | undefined,
  since: string | undefined,
  asKnownAt: string | undefined,
): Promise<MultiTickerHistoryResponse> {
  const list = parseTickerList(tickers);
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  requireOrderedDates(from, to);
  const sinceAt = parseInstantParam('since', since, 'up');
  const knownAt = parseInstantParam('as_known_at', asKnownAt);
  const v = await call.visibility();
  const result = await getMultiTickerHistory(call.ctx.reads, v, { tickers: list, start: from, end: to, since: sinceAt, asKnownAt: knownAt });
  await call.charge('multi_history', result.rows.length);
  const seen = new Set<string>();
  const rows = result.rows.map((r): MultiTickerHistoryRow => {
    seen.add(r.ticker);
    return {
      ticker: r.ticker,
      date: r.date,
      main_street: r.main_street,
      wall_street: r.wall_street,
      service_score: r.service_score,
      divergence_gap: r.divergence_gap,
      estimated: r.estimated,
      restated_at: timestampOf(r.restated_at),
    };
  });
  return {
    rows,
    count: rows.length,
    tickers: seen.size,
    start: result.start,
    end: result.end,
    since: sinceAt === undefined ? null : since!.trim(),
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl()),
  };
}
