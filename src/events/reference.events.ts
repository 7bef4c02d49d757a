/**
 * Reference-data events. Streams: `tickers`, `prices-YYYY-MM-DD`, `visits-YYYY-MM-DD`,
 * `earnings`, `theme-<slug>`, `signals`.
 */
export interface TickerListed {
  type: 'TickerListed';
  /** A later TickerListed for the same symbol updates its fields. */
  data: { symbol: string; company: string; sector: string; size_rank: number };
}

export interface ClosePricesRecorded {
  type: 'ClosePricesRecorded';
  data: { date: string; closes: { ticker: string; close: number }[] };
}

export interface WebVisitsRecorded {
  type: 'WebVisitsRecorded';
  data: { date: string; visits: { ticker: string; visits: number }[] };
}

export interface EarningsDatesScheduled {
  type: 'EarningsDatesScheduled';
  /** The latest scheduled date per ticker wins for that ticker's upcoming report. */
  data: { rows: { ticker: string; date: string }[] };
}

export interface ThemeDefined {
  type: 'ThemeDefined';
  data: {
    slug: string;
    name: string;
    description: string;
    strength: number;
    constituents: { ticker: string; relationship: string }[];
  };
}

export interface SignalPublished {
  type: 'SignalPublished';
  data: {
    id: number;
    alert_type: string;
    content: string;
    tickers: string[];
    themes: string[];
    /** ISO instant. */
    created_at: string;
  };
}

export type ReferenceEvent =
  | TickerListed
  | ClosePricesRecorded
  | WebVisitsRecorded
  | EarningsDatesScheduled
  | ThemeDefined
  | SignalPublished;

export const TICKERS_STREAM = 'tickers';
export const EARNINGS_STREAM = 'earnings';
export const SIGNALS_STREAM = 'signals';
export const pricesStream = (date: string) => `prices-${date}`;
export const visitsStream = (date: string) => `visits-${date}`;
export const themeStream = (slug: string) => `theme-${slug}`;
