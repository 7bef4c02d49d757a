import { defineCollection } from '../../src/core/read-store.port.js';
import { dictionary, type ScoreColumns } from './columns.js';

// The daily-scores projection writes these documents; the divergence projection reads a day's
// cross-section from them while it applies the same score events, so the read model is defined here.

/**
 * The whole universe's current scores on one date: what screener, divergence, themes and
 * earnings read for "the scores as of D" in one document instead of one per ticker.
 *
 * Stored column-wise (see ../columns.ts): the arrays are indexed like `tickers`, the scores are
 * score columns (read them with `scoreAt`, or as rows with `crossSection`).
 */
export interface DailyScores extends ScoreColumns {
  date: string;
  /** When the day was first published. */
  published_at: string;
  /** The tickers scored that day, in the order they were first published. */
  tickers: string[];
  /** restated_at of the rows restated since publication (an idempotency guard). */
  restated: Record<string, string>;
}

export const dailyScores = defineCollection<DailyScores>({
  name: 'daily_scores',
  key: (d) => d.date,
  fields: ['date'],
  indexes: [['date']],
});

/** A date's cross-section before any of its scores (first published at `publishedAt`). */
export const emptyDay = (date: string, publishedAt = ''): DailyScores => ({
  date,
  published_at: publishedAt,
  tickers: [],
  main_street: [],
  wall_street: [],
  service_score: [],
  estimated: [],
  restated: dictionary(),
});

/** Each ticker's index in the day's arrays. */
export function tickerIndex(day: DailyScores): Map<string, number> {
  return new Map(day.tickers.map((t, i) => [t, i]));
}
