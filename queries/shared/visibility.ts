import type { ReadStore } from '../../src/core/read-store.port.js';
import type { Entitlements } from '../../src/domain/plans.js';
import { addDays, toDateString } from '../../src/domain/trading-calendar.js';
import { scoreDates } from '../../projections/daily-scores/daily-scores.projection.js';
import { dailyScores, type DailyScores } from '../../projections/shared/daily-scores.js';
import { tickers } from '../../projections/reference/reference.projection.js';
import type { ScoreEvent } from '../../src/domain/scores/score.events.js';
import type { TickerListed } from '../../src/domain/scores/reference.events.js';

/** Size rank at or below which a ticker belongs to the `top100` universe. */
export const TOP100_RANK = 100;

/**
 * What one caller may see right now, from the entitlements of its plan (docs/product.md, "Plans"):
 * - `asOf`: the latest score date on or before today − delay_days (the free tier trails 7 days);
 *   every endpoint serves data as of this date and no later.
 * - `floor`: the earliest date reachable (today − history_days; null = the full history).
 * - `coverage`: `all`, or `top100` (the 100 largest tickers by size rank).
 */
export interface Visibility {
  today: string;
  asOf: string | null;
  /** The latest date the caller's delay allows, whether or not scores exist for it. */
  cutoff: string;
  floor: string | null;
  coverage: 'all' | 'top100';
  /** Tickers in the caller's universe (null = all). */
  universe: ReadonlySet<string> | null;
}

export async function visibilityFor(reads: ReadStore, entitlements: Entitlements, now: Date): Promise<Visibility> {
  const today = toDateString(now);
  const cutoff = addDays(today, -entitlements.delay_days);
  const latest = await reads.find(scoreDates, { date: { $lte: cutoff } }, { sort: [['date', -1]], limit: 1 });
  const universe = entitlements.coverage === 'top100' ? await top100(reads) : null;
  return {
    today,
    asOf: latest.items[0]?.date ?? null,
    cutoff,
    floor: entitlements.history_days === null ? null : addDays(today, -entitlements.history_days),
    coverage: entitlements.coverage,
    universe,
  };
}

/** Event types whose projection changes what `visibilityFor` reads (score dates, the ticker list). */
export const VISIBILITY_EVENT_TYPES: ReadonlySet<string> = new Set<ScoreEvent['type'] | TickerListed['type']>([
  'ScoresPublished',
  'ScoresRestated',
  'TickerListed',
]);

/**
 * `visibilityFor`, memoised per day and plan shape. A visibility depends only on today's date,
 * the entitlements' delay / history / coverage, the score dates and the ticker list; the last two
 * change only when an event of `VISIBILITY_EVENT_TYPES` reaches the read models, and the owner
 * calls `invalidate()` then. Every metered call needs one, so this keeps two read-model queries
 * off the hot path. A computation that overlaps an invalidation is not kept.
 */
export class VisibilityCache {
  private readonly memo = new Map<string, Promise<Visibility>>();
  private generation = 0;

  constructor(private readonly reads: ReadStore) {}

  get(entitlements: Entitlements, now: Date): Promise<Visibility> {
    const key = `${toDateString(now)}|${entitlements.delay_days}|${entitlements.history_days}|${entitlements.coverage}`;
    const hit = this.memo.get(key);
    if (hit) return hit;
    if (this.memo.size >= 64) this.memo.clear(); // old days' entries
    const generation = this.generation;
    const computed = visibilityFor(this.reads, entitlements, now);
    this.memo.set(key, computed);
    const forget = () => {
      if (this.memo.get(key) === computed) this.memo.delete(key);
    };
    computed.then(() => generation !== this.generation && forget(), forget);
    return computed;
  }

  invalidate(): void {
    this.generation++;
    this.memo.clear();
  }
}

async function top100(reads: ReadStore): Promise<Set<string>> {
  const page = await reads.find(tickers, { size_rank: { $lte: TOP100_RANK } }, { sort: [['size_rank', 1]] });
  return new Set(page.items.map((t) => t.symbol));
}

export function inUniverse(v: Visibility, ticker: string): boolean {
  return v.universe === null || v.universe.has(ticker);
}

/** Clamps a requested date window to what the caller may see (silently, as the spec says). */
export function clampWindow(v: Visibility, start?: string, end?: string): { start: string | null; end: string | null } {
  let s = start ?? v.floor ?? null;
  if (s !== null && v.floor !== null && s < v.floor) s = v.floor;
  let e = end ?? v.asOf;
  if (e !== null && v.asOf !== null && e > v.asOf) e = v.asOf;
  if (v.asOf === null) e = null;
  return { start: s, end: e };
}

/** The cross-section of the caller's as-of date (null before any scores exist). */
export async function crossSectionAsOf(reads: ReadStore, v: Visibility): Promise<DailyScores | null> {
  if (!v.asOf) return null;
  return reads.get(dailyScores, v.asOf);
}
