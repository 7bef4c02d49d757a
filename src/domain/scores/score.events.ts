/**
 * Score events. One stream per score date: `scores-YYYY-MM-DD`.
 * Times in events are the publication history's own times (ISO instants), never the moment a
 * seed or replay happened to run: `restated_at`, `since` and point-in-time reads report them.
 */
export interface ScoreValues {
  ticker: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  /** true when the row is model-backfilled. */
  estimated: boolean;
}

/** First publication of rows for a date (a later event may add tickers first seen then). */
export interface ScoresPublished {
  type: 'ScoresPublished';
  data: { date: string; published_at: string; rows: ScoreValues[] };
}

/** Corrected values for rows already published. */
export interface ScoresRestated {
  type: 'ScoresRestated';
  data: { date: string; restated_at: string; rows: ScoreValues[] };
}

export type ScoreEvent = ScoresPublished | ScoresRestated;

export const scoreStream = (date: string) => `scores-${date}`;
