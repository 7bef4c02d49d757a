/**
 * Read-model documents stored column-wise: parallel arrays instead of an object or a tuple per
 * row. A full rebuild writes millions of daily values, and number arrays serialise and parse
 * much faster than per-row objects.
 *
 * Day columns (score history by month, prices and web visits by year): an ascending `days` array
 * and value arrays indexed like it. Days arrive mostly in order, so a search starts from the end
 * and an insert is usually an append.
 */

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

/** The score at index `i` of a score column. */
export function scoreAt(column: readonly number[], i: number): number {
  const v = column[i]!;
  return Number.isInteger(v) ? v / 10 : v;
}
