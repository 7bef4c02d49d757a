import type { ReadStore } from '../../src/core/read-store.port.js';
import { byServiceScoreDesc, visibleCrossSection } from '../shared/cross-section.js';
import type { Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { SOURCE_STATEMENT, citationUrl } from '../shared/provenance.js';
import { parseIntParam, parseOptionalIntParam } from '../../src/web/int-param.js';

export const SCREENER_LIMIT = { default: 100, min: 1, max: 650 } as const;
/** `min_score` is a score: 0-100, a value outside is a plain 400 (not a limit). */
export const SCREENER_MIN_SCORE = { min: 0, max: 100, aboveMax: 'bad_request' } as const;

export interface ScreenerRow {
  /** Stock symbol. */
  ticker: string;
  /**
   * Score date; equals `as_of`.
   * @format date
   */
  date: string;
  /** Measured consumer demand, 0-100. */
  main_street: number;
  /** Analyst sentiment, 0-100. */
  wall_street: number;
  /** Composite, 0-100; the ranking key. */
  service_score: number;
  /** main_street − wall_street. */
  divergence_gap: number;
}

export interface ScreenerCriteria {
  /** Only rows with service_score >= this. */
  minScore?: number;
  limit: number;
}

/**
 * The caller's as-of cross-section (its universe only), ranked by service_score descending
 * (ties by ticker), filtered by `minScore`, cut at `limit`.
 */
export async function screenStocks(reads: ReadStore, v: Visibility, criteria: ScreenerCriteria): Promise<ScreenerRow[]> {
  const rows = [...(await visibleCrossSection(reads, v)).values()];
  return rows
    .filter((r) => criteria.minScore === undefined || r.service_score >= criteria.minScore)
    .sort(byServiceScoreDesc)
    .slice(0, criteria.limit)
    .map((r) => ({
      ticker: r.ticker,
      date: r.date,
      main_street: r.main_street,
      wall_street: r.wall_street,
      service_score: r.service_score,
      divergence_gap: r.divergence_gap,
    }));
}

export interface ScreenerResponse {
  /** Stocks ranked by service_score, descending (ties by ticker). */
  rows: ScreenerRow[];
  /**
   * Rows returned, after your tier's coverage filter: the billed quantity.
   * @isInt
   */
  count: number;
  /**
   * Data as-of date; on the free tier it trails today by 7 days. null before any scores exist.
   * @format date
   */
  as_of: string | null;
  /** A data-source statement. */
  source: string;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, min_score: string | undefined, limit: string | undefined): Promise<ScreenerResponse> {
  const minScore = parseOptionalIntParam('min_score', min_score, SCREENER_MIN_SCORE);
  const max = parseIntParam('limit', limit, SCREENER_LIMIT);
  const v = await call.visibility();
  const rows = await screenStocks(call.ctx.reads, v, { minScore, limit: max });
  await call.charge('screener', rows.length);
  return {
    rows,
    count: rows.length,
    as_of: v.asOf,
    source: SOURCE_STATEMENT,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }),
  };
}
