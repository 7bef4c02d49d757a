import { Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { badRequest } from '../../src/core/errors.js';
import type { AuthedRequest } from '../../src/http/authentication.js';
import { MeteredController } from '../../src/http/metered-controller.js';
import type { ProblemDetails } from '../../src/http/problem.js';
import { SOURCE_STATEMENT, citationUrl } from '../../src/http/provenance.js';
import { getLatestScore } from './get-score.query.js';

export interface ScoreResponse {
  /** Requested symbol (upper-cased). */
  ticker: string;
  /** Score date; equals `as_of`. */
  date: string;
  /** Measured consumer demand, 0-100. */
  main_street: number;
  /** Analyst sentiment, 0-100. */
  wall_street: number;
  /** Composite, 0-100. */
  service_score: number;
  /** main_street − wall_street; null if either is missing. */
  divergence_gap: number | null;
  /** true when the row is model-backfilled. */
  estimated: boolean;
  /** Data as-of date. */
  as_of: string;
  /** A data-source statement. */
  source: string;
  /** Canonical page to cite. */
  citation_url: string;
}

@Route('v1/scores')
@Tags('Scores and history')
@Security('api_key', ['scores'])
export class GetScoreController extends MeteredController {
  /**
   * The latest Main-Street / Wall-Street scores of one stock.
   * @param ticker Stock symbol, case-insensitive, at most 12 characters.
   * @example ticker "AAPL"
   */
  @Get('{ticker}')
  @Response<ProblemDetails>(400, 'Malformed ticker')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or ticker outside your coverage (coverage)')
  @Response<ProblemDetails>(404, 'Unknown ticker')
  @Response<ProblemDetails>(429, 'Credits exhausted (allowance and prepaid gone, overage off)')
  public async getScore(@Path() ticker: string, @Request() req: AuthedRequest): Promise<ScoreResponse> {
    const symbol = checkTicker(ticker);
    const row = await getLatestScore(this.services.reads, symbol);
    await this.charge(req, 'scores');
    return {
      ticker: symbol,
      date: row.date,
      main_street: row.main_street,
      wall_street: row.wall_street,
      service_score: row.service_score,
      divergence_gap: row.divergence_gap,
      estimated: row.estimated,
      as_of: row.date,
      source: SOURCE_STATEMENT,
      citation_url: citationUrl(this.services.baseUrl(), symbol),
    };
  }
}

/** Ticker path parameters: at most 12 characters, letters, digits, '.' and '-'; upper-cased. */
export function checkTicker(ticker: string): string {
  const t = ticker.trim().toUpperCase();
  if (t.length === 0 || t.length > 12) throw badRequest('ticker must be 1 to 12 characters');
  if (!/^[A-Z0-9.-]+$/.test(t)) throw badRequest('ticker may hold only letters, digits, "." and "-"');
  return t;
}
