import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ReferenceEvent, SignalPublished, ThemeRelationship } from '../../src/domain/scores/reference.events.js';
import { BatchBuckets, daysUpTo, insertAt } from '../shared/columns.js';
import { monthDay, prices, seriesKey, webVisits, type DailySeriesBucket } from '../shared/daily-series.js';

export interface TickerDoc {
  symbol: string;
  company: string;
  sector: string;
  size_rank: number;
}
export interface EarningsDoc {
  ticker: string;
  /** Fiscal reporting quarter of the date (YYYY-Qn): a reschedule inside it replaces the date. */
  quarter: string;
  date: string;
}
export interface ThemeDoc {
  slug: string;
  name: string;
  description: string;
  strength: number;
  constituents: { ticker: string; relationship: ThemeRelationship }[];
}
/** A signal as published: the event's own data. */
export type SignalDoc = SignalPublished['data'];

export const tickers = defineCollection<TickerDoc>({
  name: 'tickers',
  key: (t) => t.symbol,
  fields: ['symbol', 'size_rank'],
  indexes: [['size_rank']],
});
/** Sets one day's value per ticker in the year buckets of a daily series. */
async function recordDaily<Row extends { ticker: string }>(
  series: BatchBuckets<DailySeriesBucket>,
  date: string,
  rows: readonly Row[],
  valueOf: (row: Row) => number,
): Promise<void> {
  const year = date.slice(0, 4);
  const day = monthDay(date);
  const buckets = await series.load(year, rows);
  for (let i = 0; i < rows.length; i++) {
    const { ticker } = rows[i]!;
    const slot = buckets.get(ticker)!;
    const b = (slot.doc ??= { ticker, year, days: [], values: [] });
    if (setDay(b, day, valueOf(rows[i]!))) slot.changed = true;
  }
}

/** Sets a day's value in a bucket; false when it had that value already. */
function setDay(b: DailySeriesBucket, day: number, value: number): boolean {
  const n = daysUpTo(b.days, day);
  if (n > 0 && b.days[n - 1] === day) {
    if (b.values[n - 1] === value) return false;
    b.values[n - 1] = value;
    return true;
  }
  insertAt(b.days, n, day);
  insertAt(b.values, n, value);
  return true;
}

export const earnings = defineCollection<EarningsDoc>({
  name: 'earnings',
  key: (e) => `${e.ticker}|${e.quarter}`,
  fields: ['ticker', 'date'],
  indexes: [['date']],
});
export const themes = defineCollection<ThemeDoc>({
  name: 'themes',
  key: (t) => t.slug,
  fields: ['slug'],
  indexes: [],
});
export const signals = defineCollection<SignalDoc>({
  name: 'signals',
  key: (s) => String(s.id).padStart(12, '0'),
  fields: ['id', 'created_at'],
  indexes: [['created_at']],
});

const quarterOf = (date: string) => `${date.slice(0, 4)}-Q${Math.floor((Number(date.slice(5, 7)) - 1) / 3) + 1}`;

/** Tickers, prices, web visits, earnings dates, themes and signals, each as a lookup table. */
export const referenceProjection: Projection = {
  // v2: year buckets of prices and visits (a new name rebuilds the read models of an existing store).
  name: 'reference-v2',
  collections: [tickers, prices, webVisits, earnings, themes, signals],
  eventTypes: [
    'TickerListed',
    'ClosePricesRecorded',
    'WebVisitsRecorded',
    'EarningsDatesScheduled',
    'ThemeDefined',
    'SignalPublished',
  ],
  apply(event: RecordedEvent, ctx: ProjectionContext) {
    return applyReference([event], ctx);
  },
  applyBatch: applyReference,
};

/** Applies reference events in order; each price or visits bucket they change is loaded and written once. */
async function applyReference(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  const closes = new BatchBuckets(ctx, prices, seriesKey);
  const visits = new BatchBuckets(ctx, webVisits, seriesKey);
  for (const raw of events) {
    const event = raw as unknown as ReferenceEvent;
    switch (event.type) {
      case 'TickerListed':
        ctx.upsert(tickers, { ...event.data });
        break;
      case 'ClosePricesRecorded':
        await recordDaily(closes, event.data.date, event.data.closes, (c) => c.close);
        break;
      case 'WebVisitsRecorded':
        await recordDaily(visits, event.data.date, event.data.visits, (v) => v.visits);
        break;
      case 'EarningsDatesScheduled':
        for (const r of event.data.rows) ctx.upsert(earnings, { ticker: r.ticker, quarter: quarterOf(r.date), date: r.date });
        break;
      case 'ThemeDefined':
        ctx.upsert(themes, { ...event.data });
        break;
      case 'SignalPublished':
        ctx.upsert(signals, { ...event.data });
        break;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  }
  closes.flush();
  visits.flush();
}
