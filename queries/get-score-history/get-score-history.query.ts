import type { ReadStore } from '../../src/core/read-store.port.js';
import { rowsBetween, scoreHistory, type HistoryRow } from '../../projections/score-history/score-history.projection.js';
import { rowsAsKnownAt } from '../shared/point-in-time.js';
import { requireVisibleTicker } from '../shared/tickers.js';
import { clampWindow, type Visibility } from '../shared/visibility.js';

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
export async function getScoreHistory(reads: ReadStore, v: Visibility, req: HistoryRequest): Promise<HistoryResult> {
  await requireVisibleTicker(reads, v, req.ticker);
  const w = clampWindow(v, req.start, req.end);
  let rows: HistoryRow[] = [];
  if (w.end !== null && (w.start === null || w.start <= w.end)) {
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
