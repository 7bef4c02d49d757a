import { AppError, badRequest, notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { latestScores, type LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { inUniverse, type Visibility } from './visibility.js';

/** Spec "Limits": a ticker has at most 12 characters. */
export const MAX_TICKER_LENGTH = 12;
/** Spec "Limits": `tickers` of the multi-ticker history names at most 50 symbols. */
export const MAX_TICKERS_PER_CALL = 50;

// Checked on the text as sent, before upper-casing: Unicode case mapping turns "ﬁ" into "FI" and
// "ſ" into "S", which would name (and bill) a real stock.
export const SYMBOL = /^[A-Za-z0-9.-]+$/;

function isSymbol(t: string): boolean {
  return t.length > 0 && t.length <= MAX_TICKER_LENGTH && SYMBOL.test(t);
}

/**
 * An upper-cased symbol, or null when the text cannot be one. Not trimmed: `AAPL%20` or a tab
 * after it names no stock (and costs nothing), rather than being served and billed as AAPL.
 */
const symbolOf = (text: string): string | null => (isSymbol(text) ? text.toUpperCase() : null);

/**
 * A `{ticker}` path segment, upper-cased. A segment that cannot be a symbol (longer than 12
 * characters, or other characters than letters, digits, '.' and '-') names no stock: 404
 * `not_found` with the reason, since the spec lists no 400 for `/v1/scores/{ticker}`.
 */
export function tickerFromPath(raw: string): string {
  const t = symbolOf(raw);
  if (t === null) {
    throw notFound(
      `no stock has the ticker "${raw.length > 40 ? `${raw.slice(0, 40)}…` : raw}": tickers are 1 to ${MAX_TICKER_LENGTH} letters, digits, "." or "-"`,
    );
  }
  return t;
}

/**
 * The `tickers` query parameter: comma-separated symbols, case-insensitive, duplicates merged,
 * at most 50. undefined = not sent (the caller's whole universe). Sent but empty is refused rather
 * than read as "everything": a client joining an empty list must not buy the whole universe.
 */
export function parseTickerList(raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  const entries = raw.split(',').map((s) => s.trim());
  const problem = (message: string) => badRequest(`tickers ${message}`, { errors: [{ parameter: 'tickers', message }] });
  if (entries.every((e) => e === '')) throw problem('is empty; omit it to get every ticker your key can see');
  const bad = entries.filter((e) => symbolOf(e) === null);
  if (bad.length) {
    const shown = bad.slice(0, 5).map((e) => (e === '' ? '(empty entry)' : `"${e.slice(0, 20)}"`));
    throw problem(`holds entries that are not tickers (1 to ${MAX_TICKER_LENGTH} letters, digits, "." or "-"): ${shown.join(', ')}`);
  }
  const unique = [...new Set(entries.map((e) => e.toUpperCase()))];
  if (unique.length > MAX_TICKERS_PER_CALL) {
    throw problem(`names ${unique.length} tickers; at most ${MAX_TICKERS_PER_CALL} per call (omit it for your whole universe)`);
  }
  return unique;
}

/**
 * The ticker's latest score row; 404 when it has none, then 403 `coverage` when it is outside the
 * caller's universe (existence first: "no such stock" is the more useful answer).
 */
export async function requireVisibleTicker(reads: ReadStore, v: Visibility, ticker: string): Promise<LatestScore> {
  const latest = await reads.get(latestScores, ticker);
  if (!latest) throw notFound(`no scores for ticker ${ticker}`);
  if (!inUniverse(v, ticker)) throw outsideCoverage(v, [ticker]);
  return latest;
}

/** 404 naming every unknown ticker of a list, else 403 naming every one outside the universe. */
export async function requireVisibleTickers(reads: ReadStore, v: Visibility, list: readonly string[]): Promise<void> {
  const known = await reads.getMany(latestScores, list);
  const unknown = list.filter((t) => !known.has(t));
  if (unknown.length) {
    throw new AppError('not_found', `no scores for ticker${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`, { unknown_tickers: unknown });
  }
  const outside = list.filter((t) => !inUniverse(v, t));
  if (outside.length) throw outsideCoverage(v, outside);
}

function outsideCoverage(v: Visibility, outside: string[]): AppError {
  return new AppError(
    'coverage',
    `${outside.join(', ')} ${outside.length > 1 ? 'are' : 'is'} outside your coverage (${v.coverage}); upgrade or add Pro for the full universe`,
    { coverage: v.coverage, outside_coverage: outside },
  );
}
