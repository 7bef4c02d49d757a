import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ReferenceEvent } from '../../src/events/reference-events.js';

export interface TickerDoc {
  symbol: string;
  company: string;
  sector: string;
  size_rank: number;
}
/** One ticker's daily values of one month (date → value); month buckets keep rebuilds fast. */
export interface DailySeriesBucket {
  ticker: string;
  /** YYYY-MM */
  month: string;
  values: Record<string, number>;
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
  constituents: { ticker: string; relationship: string }[];
}
export interface SignalDoc {
  id: number;
  alert_type: string;
  content: string;
  tickers: string[];
  themes: string[];
  created_at: string;
}

export const tickers = defineCollection<TickerDoc>({
  name: 'tickers',
  key: (t) => t.symbol,
  fields: ['symbol', 'size_rank'],
  indexes: [['size_rank']],
});
/** Daily close prices. */
export const prices = defineCollection<DailySeriesBucket>({
  name: 'prices',
  key: (p) => `${p.ticker}|${p.month}`,
  fields: ['ticker', 'month'],
  indexes: [['ticker', 'month']],
});
/** Daily US web-visit counts. */
export const webVisits = defineCollection<DailySeriesBucket>({
  name: 'web_visits',
  key: (p) => `${p.ticker}|${p.month}`,
  fields: ['ticker', 'month'],
  indexes: [['ticker', 'month']],
});

/** Sets one day's value per ticker in the month buckets of a daily series. */
async function recordDaily(
  ctx: ProjectionContext,
  def: typeof prices,
  date: string,
  values: { ticker: string; value: number }[],
): Promise<void> {
  const month = date.slice(0, 7);
  const buckets = await ctx.getMany(
    def,
    values.map((v) => `${v.ticker}|${month}`),
  );
  for (const { ticker, value } of values) {
    const b = buckets.get(`${ticker}|${month}`) ?? { ticker, month, values: {} };
    if (b.values[date] === value) continue;
    b.values[date] = value;
    ctx.upsert(def, b);
  }
}

/** The values of a daily series between two dates (inclusive), oldest first. */
export function seriesBetween(buckets: DailySeriesBucket[], start?: string, end?: string): { date: string; value: number }[] {
  const out: { date: string; value: number }[] = [];
  for (const b of buckets) {
    for (const [date, value] of Object.entries(b.values)) {
      if ((start && date < start) || (end && date > end)) continue;
      out.push({ date, value });
    }
  }
  return out.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
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
  name: 'reference',
  collections: [tickers, prices, webVisits, earnings, themes, signals],
  eventTypes: [
    'TickerListed',
    'ClosePricesRecorded',
    'WebVisitsRecorded',
    'EarningsDatesScheduled',
    'ThemeDefined',
    'SignalPublished',
  ],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ReferenceEvent;
    switch (event.type) {
      case 'TickerListed':
        ctx.upsert(tickers, { ...event.data });
        return;
      case 'ClosePricesRecorded':
        return recordDaily(
          ctx,
          prices,
          event.data.date,
          event.data.closes.map((c) => ({ ticker: c.ticker, value: c.close })),
        );
      case 'WebVisitsRecorded':
        return recordDaily(
          ctx,
          webVisits,
          event.data.date,
          event.data.visits.map((v) => ({ ticker: v.ticker, value: v.visits })),
        );
      case 'EarningsDatesScheduled':
        for (const r of event.data.rows) ctx.upsert(earnings, { ticker: r.ticker, quarter: quarterOf(r.date), date: r.date });
        return;
      case 'ThemeDefined':
        ctx.upsert(themes, { ...event.data });
        return;
      case 'SignalPublished':
        ctx.upsert(signals, { ...event.data });
        return;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
