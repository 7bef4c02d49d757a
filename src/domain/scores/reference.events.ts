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

/**
 * How a constituent relates to its theme: a closed set, so a client can switch on it (ingest
 * refuses any other value, and the OpenAPI document lists these as the enum).
 */
export const THEME_RELATIONSHIPS = ['core', 'supplier', 'beneficiary', 'adjacent', 'headwind'] as const;
export type ThemeRelationship = (typeof THEME_RELATIONSHIPS)[number];

/** The kinds of research signal: a closed set, like THEME_RELATIONSHIPS. */
export const SIGNAL_ALERT_TYPES = ['divergence_alert', 'demand_surge', 'sentiment_shift', 'earnings_watch', 'theme_rotation'] as const;
export type SignalAlertType = (typeof SIGNAL_ALERT_TYPES)[number];

export interface ThemeDefined {
  type: 'ThemeDefined';
  data: {
    slug: string;
    name: string;
    description: string;
    strength: number;
    constituents: { ticker: string; relationship: ThemeRelationship }[];
  };
}

/**
 * What a signal says, declared once: the event records it and `/v1/signals` answers with it (with
 * the API's words and formats, which tsoa reads here); only `created_at` differs in form.
 */
export interface SignalFields {
  /**
   * Stable id, increasing with publication.
   * @isInt
   */
  id: number;
  /** Kind of signal. */
  alert_type: SignalAlertType;
  /** The research note. */
  content: string;
  /** Symbols the signal is about (may be empty). */
  tickers: string[];
  /** Slugs of the themes it concerns (see GET /v1/themes). */
  themes: string[];
}

export interface SignalPublished {
  type: 'SignalPublished';
  data: SignalFields & {
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
