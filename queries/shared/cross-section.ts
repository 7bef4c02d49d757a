import type { ReadStore } from '../../src/core/read-store.port.js';
import { round1 } from '../../src/domain/composite.js';
import { crossSection, type CrossSectionRow } from '../../projections/daily-scores/daily-scores.projection.js';
import { crossSectionAsOf, inUniverse, type Visibility } from './visibility.js';

/**
 * The scores of the caller's as-of date (delay-aware), restricted to the caller's universe:
 * ticker → row. Empty before any scores are visible.
 */
export async function visibleCrossSection(reads: ReadStore, v: Visibility): Promise<Map<string, CrossSectionRow>> {
  const day = await crossSectionAsOf(reads, v);
  const out = new Map<string, CrossSectionRow>();
  if (!day) return out;
  for (const row of crossSection(day)) if (inUniverse(v, row.ticker)) out.set(row.ticker, row);
  return out;
}

/** Orders by `service_score` descending, ties by ticker (byte order, so the order never depends on a locale). */
export function byServiceScoreDesc(a: { service_score: number; ticker: string }, b: { service_score: number; ticker: string }): number {
  return b.service_score - a.service_score || compareText(a.ticker, b.ticker);
}

export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Mean rounded to 1 decimal (the scale of the scores); null for no values. */
export function mean1(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  return round1(values.reduce((s, x) => s + x, 0) / values.length);
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) of an ISO instant: the spec's timestamp format. */
export function toTimestamp(iso: string): string {
  return new Date(iso).toISOString().slice(0, 19).replace('T', ' ');
}
