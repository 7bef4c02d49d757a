import { eventTypesOf, type ReadModelMemo } from '../../src/core/read-model-memo.js';
import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import { round1, round2 } from '../../src/domain/composite.js';
import { divergenceEvents, divergenceProjection, type DivergenceEventDoc } from '../../projections/divergence/divergence.projection.js';
import { compareText } from '../shared/cross-section.js';
import type { Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';

export interface Trade {
  /** Stock symbol. */
  ticker: string;
  /** `long` (a bull event) or `short` (a bear event). */
  direction: 'long' | 'short';
  /**
   * The event's flag_date.
   * @format date
   */
  entry_date: string;
  /**
   * The event's close_date.
   * @format date
   */
  exit_date: string;
  /** price_at_flag. */
  entry_price: number;
  /** price_at_close. */
  exit_price: number;
  /** Percent, direction-adjusted: pct_change for a long, −pct_change for a short. */
  return_pct: number;
  /**
   * Calendar days from entry to exit.
   * @isInt
   */
  days_held: number;
  /** return_pct > 0. */
  win: boolean;
}

export interface TrackRecord {
  /**
   * Number of closed trades.
   * @isInt
   */
  closed_trades: number;
  /** Fraction 0-1 of closed trades that won, 4 decimals; null without trades. */
  win_rate: number | null;
  /** Mean return_pct, 2 decimals; null without trades. */
  avg_return_pct: number | null;
  /** Median return_pct, 2 decimals; null without trades. */
  median_return_pct: number | null;
  /** Mean days_held, 1 decimal; null without trades. */
  avg_days_held: number | null;
  /** Highest return_pct; null without trades. */
  best_return_pct: number | null;
  /** Lowest return_pct; null without trades. */
  worst_return_pct: number | null;
  /** Every closed trade, newest exit first (ties by ticker). */
  trades: Trade[];
}

/** A closed event as a model-portfolio trade (null when it lacks a price). */
export function toTrade(e: DivergenceEventDoc): Trade | null {
  if (e.status !== 'closed' || e.close_date === null || e.price_at_flag === null || e.price_at_close === null || e.pct_change === null) return null;
  const long = e.direction === 'bull';
  const ret = long ? e.pct_change : -e.pct_change;
  const return_pct = ret === 0 ? 0 : ret; // never −0
  return {
    ticker: e.ticker,
    direction: long ? 'long' : 'short',
    entry_date: e.flag_date,
    exit_date: e.close_date,
    entry_price: e.price_at_flag,
    exit_price: e.price_at_close,
    return_pct,
    days_held: e.days ?? 0,
    win: return_pct > 0,
  };
}

/** Aggregates of a list of trades (the same figures the endpoint reports). */
export function aggregate(trades: Trade[]): Omit<TrackRecord, 'trades'> {
  const n = trades.length;
  if (n === 0) {
    return { closed_trades: 0, win_rate: null, avg_return_pct: null, median_return_pct: null, avg_days_held: null, best_return_pct: null, worst_return_pct: null };
  }
  const returns = trades.map((t) => t.return_pct).sort((a, b) => a - b);
  const mid = Math.floor(n / 2);
  const median = n % 2 ? returns[mid]! : (returns[mid - 1]! + returns[mid]!) / 2;
  return {
    closed_trades: n,
    win_rate: Math.round((trades.filter((t) => t.win).length / n) * 10_000) / 10_000,
    avg_return_pct: round2(returns.reduce((s, x) => s + x, 0) / n),
    median_return_pct: round2(median),
    avg_days_held: round1(trades.reduce((s, t) => s + t.days_held, 0) / n),
    best_return_pct: returns[n - 1]!,
    worst_return_pct: returns[0]!,
  };
}

/** What the record reads is written by the divergence projection's events only. */
const DEPENDS_ON = eventTypesOf(divergenceProjection);

/**
 * The public model portfolio: long every bull event, short every bear event, from flag to close.
 * Every event closed on or before the caller's as-of date counts (free keys trail 7 days); the
 * record is the whole universe's whatever the caller's coverage, since it is a public record of
 * the signal, not data about individual stocks beyond entry and exit.
 *
 * The record is the same for every caller with one as-of date until the divergence read models
 * change (a publication, a restatement, a close price): it is built once per as-of date and
 * position of those read models (`memo`), so a free call, however often repeated, costs a lookup
 * and the body's serialisation, not a scan of every closed event.
 */
export function trackRecord(reads: ReadStore, memo: ReadModelMemo, v: Visibility): Promise<TrackRecord> {
  return memo.get(`track-record:${v.asOf ?? ''}`, DEPENDS_ON, () => buildRecord(reads, v));
}

async function buildRecord(reads: ReadStore, v: Visibility): Promise<TrackRecord> {
  const trades: Trade[] = [];
  if (v.asOf) {
    let cursor: string | null = null;
    do {
      const page: Page<DivergenceEventDoc> = await reads.find(
        divergenceEvents,
        { status: 'closed', close_date: { $lte: v.asOf } },
        { sort: [['close_date', -1], ['ticker', 1]], limit: 5_000, cursor },
      );
      for (const e of page.items) {
        const t = toTrade(e);
        if (t) trades.push(t);
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  trades.sort((a, b) => compareText(b.exit_date, a.exit_date) || compareText(a.ticker, b.ticker) || compareText(a.entry_date, b.entry_date));
  return { ...aggregate(trades), trades };
}

export interface TrackRecordResponse extends TrackRecord {
  /**
   * Data as-of date: trades closed on or before it count (free keys trail 7 days).
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall): Promise<TrackRecordResponse> {
  const v = await call.visibility();
  const record = await trackRecord(call.ctx.reads, call.ctx.memo, v);
  await call.charge('track_record');
  return { ...record, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
