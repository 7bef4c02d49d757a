import { defineCollection } from '../../src/core/read-store.port.js';
import { daysUpTo, pad2 } from './columns.js';

// The reference projection writes the daily series; the divergence projection reads closes from
// them while it applies score events, so the read model is defined here.

/**
 * One ticker's daily values of one year, column-wise: `values[i]` is the value on `days[i]`.
 * Year buckets keep rebuilds fast: a rebuild's cost is mostly per document written, and a
 * ticker's year is one document instead of twelve.
 */
export interface DailySeriesBucket {
  ticker: string;
  /** YYYY */
  year: string;
  /** Month and day of each value as MMDD (1231 for December 31), ascending. */
  days: number[];
  values: number[];
}

export const seriesKey = (ticker: string, year: string) => `${ticker}|${year}`;
/** Daily close prices. */
export const prices = defineCollection<DailySeriesBucket>({
  name: 'prices',
  key: (p) => seriesKey(p.ticker, p.year),
  fields: ['ticker', 'year'],
  indexes: [['ticker', 'year']],
});
/** Daily US web-visit counts. */
export const webVisits = defineCollection<DailySeriesBucket>({
  name: 'web_visits',
  key: (p) => seriesKey(p.ticker, p.year),
  fields: ['ticker', 'year'],
  indexes: [['ticker', 'year']],
});

/** A date's place in its year bucket (MMDD). */
export const monthDay = (date: string) => Number(date.slice(5, 7)) * 100 + Number(date.slice(8, 10));
const dateOf = (year: string, mmdd: number) => `${year}-${pad2(Math.floor(mmdd / 100))}-${pad2(mmdd % 100)}`;

/** The values of a daily series between two dates (inclusive), oldest first. */
export function seriesBetween(buckets: DailySeriesBucket[], start?: string, end?: string): { date: string; value: number }[] {
  const out: { date: string; value: number }[] = [];
  for (const b of buckets) {
    for (let i = 0; i < b.days.length; i++) {
      const date = dateOf(b.year, b.days[i]!);
      if ((start && date < start) || (end && date > end)) continue;
      out.push({ date, value: b.values[i]! });
    }
  }
  return out.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

/** The bucket's latest value on or before `date` (of its year, or later), with its date. */
export function latestOnOrBefore(b: DailySeriesBucket, date: string): { date: string; value: number } | null {
  const n = date.slice(0, 4) > b.year ? b.days.length : daysUpTo(b.days, monthDay(date));
  return n > 0 ? { date: dateOf(b.year, b.days[n - 1]!), value: b.values[n - 1]! } : null;
}
