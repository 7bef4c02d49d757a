import { Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/http/authentication.js';
import { MeteredController } from '../../src/http/metered-controller.js';
import { parseDateParam } from '../../src/http/params.js';
import type { ProblemDetails } from '../../src/http/problem.js';
import { citationUrl } from '../../src/http/provenance.js';
import { checkTicker } from '../get-score/get-score.controller.js';
import { getScoreHistory } from './get-score-history.query.js';

export interface HistoryRowResponse {
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
  /** Number of rows returned. */
  count: number;
  /** Effective start date after tier clamping. */
  history_floor: string | null;
  /** History methodology statement. */
  provenance_note: string;
  as_of: string | null;
  citation_url: string;
}

export const HISTORY_NOTE =
  'Daily scores as currently published. Rows are restated deliberately when inputs are corrected; estimated rows are model backfill. Use as_known_at (or /v1/scores/history with since and restated_at) to see what was known at a given time.';

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['history'])
export class GetScoreHistoryController extends MeteredController {
  /**
   * Daily score history of one stock, oldest first.
   * @param ticker Stock symbol, case-insensitive.
   * @param start First date (YYYY-MM-DD); clamped silently to your tier's history floor.
   * @param end Last date (YYYY-MM-DD); clamped to your as-of date.
   */
  @Get('{ticker}/history')
  @Response<ProblemDetails>(400, 'Malformed date')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or ticker outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown ticker')
  @Response<ProblemDetails>(429, 'Credits exhausted')
  public async getHistory(
    @Path() ticker: string,
    @Request() req: AuthedRequest,
    @Query() start?: string,
    @Query() end?: string,
  ): Promise<ScoreHistoryResponse> {
    const symbol = checkTicker(ticker);
    const from = parseDateParam('start', start);
    const to = parseDateParam('end', end);
    const rows = await getScoreHistory(this.services.reads, { ticker: symbol, start: from, end: to });
    await this.charge(req, 'history', rows.length);
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
      history_floor: from ?? rows[0]?.date ?? null,
      provenance_note: HISTORY_NOTE,
      as_of: rows[rows.length - 1]?.date ?? null,
      citation_url: citationUrl(this.services.baseUrl(), symbol),
    };
  }
}
