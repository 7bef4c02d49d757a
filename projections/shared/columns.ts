import type { ProjectionContext } from '../../src/core/projection.js';
import type { CollectionDef } from '../../src/core/read-store.port.js';

/**
 * Read-model documents stored column-wise: parallel arrays instead of an object or a tuple per
 * row. A full rebuild writes millions of daily values, and number arrays serialise and parse
 * much faster than per-row objects.
 *
 * Day columns (score history by month, prices and web visits by year): an ascending `days` array
 * and value arrays indexed like it. Days arrive mostly in order, so a search starts from the end
 * and an insert is usually an append.
 */

/**
 * The score columns of a document (packed as `packScore` packs them), indexed like its row key
 * column (`days` of a history bucket, `tickers` of a day).
 */
export interface ScoreColumns {
  main_street: number[];
  wall_street: number[];
  service_score: number[];
  /** 1 when the row is model-backfilled. */
  estimated: (0 | 1)[];
}

/** How many of the (ascending) days are on or before `day`. */
export function daysUpTo(days: readonly number[], day: number): number {
  let n = days.length;
  while (n > 0 && days[n - 1]! > day) n--;
  return n;
}

/** Inserts `value` at index `i` of a column. */
export function insertAt<T>(column: T[], i: number, value: T): void {
  if (i === column.length) column.push(value);
  else column.splice(i, 0, value);
}

export const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * Score columns hold each score (0–100) in tenths, an integer, when it is a whole number of
 * tenths, as every computed and demo score is: integers serialise and parse about twice as fast
 * as fractions. A score with more decimals (an ingest may carry one) is kept as it is; it is never
 * an integer, so `scoreAt` tells the two apart and every value reads back exactly.
 */
export function packScore(x: number): number {
  const tenths = Math.round(x * 10);
  return tenths / 10 === x ? tenths : x;
}

/** Whether row `i` of the columns already holds these values (a restatement applied before). */
export function holds(c: ScoreColumns, i: number, v: { main_street: number; wall_street: number; service_score: number; estimated: boolean }): boolean {
  return c.main_street[i] === packScore(v.main_street) && c.wall_street[i] === packScore(v.wall_street) && c.service_score[i] === packScore(v.service_score) && c.estimated[i] === (v.estimated ? 1 : 0);
}

/** The score at index `i` of a score column. */
export function scoreAt(column: readonly number[], i: number): number {
  const v = column[i]!;
  return Number.isInteger(v) ? v / 10 : v;
}

/**
 * An empty object used as a dictionary (tickers as keys). Created in V8's dictionary mode: a
 * plain `{}` given a different set of keys each time goes through a new chain of hidden classes
 * each time, which costs more than the work it records.
 */
export const dictionary = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** A bucket of a batch (null: none yet), and whether the batch changed it. */
export interface BucketSlot<B> {
  doc: B | null;
  changed: boolean;
}

/**
 * A batch's buckets of one collection (one per ticker and period: a month of score history, a
 * year of prices), each loaded once and written once per batch, however many events and rows of
 * the batch touch it. Found by period, then ticker: no key string is built per row.
 */
export class BatchBuckets<B> {
  private readonly byPeriod = new Map<string, Map<string, BucketSlot<B>>>();

  constructor(
    private readonly ctx: Pick<ProjectionContext, 'getMany' | 'upsert'>,
    private readonly def: CollectionDef<B>,
    private readonly keyOf: (ticker: string, period: string) => string,
  ) {}

  /** The period's slots by ticker, with one for each of `rows` (loaded, or empty when none is stored). */
  async load(period: string, rows: readonly { ticker: string }[]): Promise<Map<string, BucketSlot<B>>> {
    let slots = this.byPeriod.get(period);
    if (!slots) this.byPeriod.set(period, (slots = new Map<string, BucketSlot<B>>()));
    let missing: string[] | null = null;
    for (const r of rows) if (!slots.has(r.ticker)) (missing ??= []).push(r.ticker);
    if (missing) {
      const keys = missing.map((t) => this.keyOf(t, period));
      const found = await this.ctx.getMany(this.def, keys);
      for (let i = 0; i < missing.length; i++) slots.set(missing[i]!, { doc: found.get(keys[i]!) ?? null, changed: false });
    }
    return slots;
  }

  /** Writes the buckets marked changed. */
  flush(): void {
    for (const slots of this.byPeriod.values()) {
      for (const slot of slots.values()) {
        if (slot.changed && slot.doc) this.ctx.upsert(this.def, slot.doc);
        slot.changed = false;
      }
    }
  }
}
