import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowsBetween, scoreHistory, type HistoryRow } from '../../projections/score-history/score-history.projection.js';

export interface HistoryWindow {
  ticker: string;
  /** Inclusive; undefined = from the first row. */
  start?: string;
  /** Inclusive; undefined = to the latest row. */
  end?: string;
}

/** One ticker's score rows between two dates, oldest first. */
export async function getScoreHistory(reads: ReadStore, w: HistoryWindow): Promise<HistoryRow[]> {
  const known = await reads.get(latestScores, w.ticker);
  if (!known) throw notFound(`no scores for ticker ${w.ticker}`);
  const month: { $gte?: string; $lte?: string } = {};
  if (w.start) month.$gte = w.start.slice(0, 7);
  if (w.end) month.$lte = w.end.slice(0, 7);
  const page = await reads.find(scoreHistory, { ticker: w.ticker, month }, { sort: [['month', 1]] });
  return rowsBetween(page.items, w.start, w.end);
}
