import { round1 } from '../../src/domain/composite.js';

/**
 * One ticker's scores on one date: the fields of a score row, and of every score answer of the
 * API. tsoa reads these comments into the OpenAPI document, where a response extends this
 * interface; a plain interface, since tsoa reads a nullable field through `Omit` as not nullable.
 */
export interface ScoreFields {
  ticker: string;
  /** @format date */
  date: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  /** main_street − wall_street; null if either is missing. */
  divergence_gap: number | null;
  /** true when the row is model-backfilled. */
  estimated: boolean;
}

/** A score row as both score read models hold it: a ticker's latest row, a row of its history. */
export interface ScoreRow extends ScoreFields {
  /** ISO instant of first publication. */
  published_at: string;
  /** ISO instant the row was last written (= published_at until restated). */
  restated_at: string;
}

/** A row's score fields alone, in the order the answers list them (a stored row holds its instants too). */
export function scoreFieldsOf(r: ScoreFields): ScoreFields {
  return {
    ticker: r.ticker,
    date: r.date,
    main_street: r.main_street,
    wall_street: r.wall_street,
    service_score: r.service_score,
    divergence_gap: r.divergence_gap,
    estimated: r.estimated,
  };
}

export function gapOf(v: { main_street: number; wall_street: number }): number | null {
  if (v.main_street == null || v.wall_street == null) return null;
  return round1(v.main_street - v.wall_street);
}
