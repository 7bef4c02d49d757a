import type { ReadStore } from '../../src/core/read-store.port.js';
import { rowsBetween, scoreHistory, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { rowsAsKnownAt } from '../shared/point-in-time.js';
import { requireVisibleTicker, tickerFromPath } from '../shared/tickers.js';
import { clampWindow, type Visibility } from '../shared/visibility.js';
import { requireInnerMonthsWithin, UNBOUNDED, type RowBudget } from '../shared/history-budget.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseDateParam } from '../shared/params.js';
import { citationUrl } from '../shared/provenance.js';
import { parseInstantParam } from '../shared/instants.js';

export interface HistoryRequest {
  ticker: string;
  /** Inclusive, as asked; clamped to the caller's history floor. */
  start?: string;
  /** Inclusive, as asked; clamped to the caller's as-of date. */
  end?: string;
  /** ISO instant: return the rows as they were published at that instant. */
  asKnownAt?: string;
}

export interface HistoryResult {
  rows: HistoryRow[];
  /** The effective start: the clamped start, else the tier's floor, else the ticker's first date. */
  historyFloor: string | null;
}

/**
 * One ticker's score rows inside the caller's window, oldest first: 404 for an unknown ticker,
 * 403 `coverage` outside the universe, dates clamped silently (spec, Errors rule 3).
 */
export async function getScoreHistory(reads: ReadStore, v: Visibility, req: HistoryRequest, budget: RowBudget = UNBOUNDED): Promise<HistoryResult> {
  await requireVisibleTicker(reads, v, req.ticker);
  const w = clampWindow(v, req.start, req.end);
  let rows: HistoryRow[] = [];
  if (w.end !== null && (w.start === null || w.start <= w.end)) {
    if (req.asKnownAt === undefined) await requireInnerMonthsWithin(reads, budget, [req.ticker], w.start?.slice(0, 7) ?? '', w.end.slice(0, 7));
    const month = w.start === null ? { $lte: w.end.slice(0, 7) } : { $gte: w.start.slice(0, 7), $lte: w.end.slice(0, 7) };
    const page = await reads.find(scoreHistory, { ticker: req.ticker, month }, { sort: [['month', 1]] });
    rows = rowsBetween(page.items, w.start ?? undefined, w.end);
    if (req.asKnownAt !== undefined) rows = await rowsAsKnownAt(reads, rows, req.asKnownAt);
  }
  let historyFloor = w.start;
  if (historyFloor === null) historyFloor = req.asKnownAt === undefined && rows[0] ? rows[0].date : await firstDateOf(reads, req.ticker);
  return { rows, historyFloor };
}

/** The ticker's first score date (the floor of a tier with the full history). */
async function firstDateOf(reads: ReadStore, ticker: string): Promise<string | null> {
  const page = await reads.find(scoreHistory, { ticker }, { sort: [['month', 1]], limit: 1 });
  return rowsBetween(page.items)[0]?.date ?? null;
}

// Not derived from ScoreFields: tsoa writes a `Pick_…` schema into its document for every `Omit`.
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

export async function run(
  call: MeteredCall,
  ticker: string,
  start: string | undefined,
  end: string | undefined,
  asKnownAt: string | undefined,
): Promise<ScoreHistoryResponse> {
  const from = parseDateParam('start', start);
  const to = parseDateParam('end', end);
  const knownAt = parseInstantParam('as_known_at', asKnownAt);
  const symbol = tickerFromPath(ticker);
  const v = await call.visibility();
  const budget = { rows: call.unitsAllowed('history'), over: () => call.overBudget('history') };
  const { rows, historyFloor } = await getScoreHistory(call.ctx.reads, v, { ticker: symbol, start: from, end: to, asKnownAt: knownAt }, budget);
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
