import { round1 } from '../../src/domain/composite.js';

/** One ticker's scores on one date, as both score read models hold it: its latest row, a history row. */
export interface ScoreRow {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  divergence_gap: number | null;
  estimated: boolean;
  /** ISO instant of first publication. */
  published_at: string;
  /** ISO instant the row was last written (= published_at until restated). */
  restated_at: string;
}

export function gapOf(v: { main_street: number; wall_street: number }): number | null {
  if (v.main_street == null || v.wall_street == null) return null;
  return round1(v.main_street - v.wall_street);
}
