/**
 * Earnings: each ticker reports once a quarter on a fixed fiscal rhythm (most in the reporting
 * season 2–6 weeks into a calendar quarter; a quarter of them off-cycle, anywhere in the quarter,
 * like NKE or ORCL). The monthly event carries, for every ticker whose previous report has passed, its
 * next report date once that date is at most 75 days away. So every ticker's next date is known
 * at least ~6 weeks ahead, and `/v1/earnings` over 14..60 days is never empty.
 */
import { addDays, toDateString, tradingDaysBetween } from '../../../src/domain/trading-calendar.js';
import type { EarningsDatesScheduled } from '../../../src/domain/scores/reference.events.js';
import { hashUnit, STREAM_TAGS } from './random.js';
import type { TickerParams } from './ticker-params.js';
import type { TickerRow } from './us-tickers.js';

const EARNINGS_HORIZON_DAYS = 75;

export class EarningsCalendar {
  private readonly reportDates = new Map<string, string[]>();

  constructor(
    private readonly seed: number,
    private readonly tickers: readonly TickerRow[],
    private readonly params: readonly TickerParams[],
    private readonly setupDate: string,
  ) {}

  /** The `EarningsDatesScheduled` published at 00:00 on `date`, with its revision in the earnings stream, if one is. */
  publicationOn(date: string): { revision: number; rows: EarningsDatesScheduled['data']['rows'] } | null {
    if (date === this.setupDate) return { revision: 0, rows: this.rowsPublishedOn(date) };
    if (date > this.setupDate && date.endsWith('-01')) return { revision: monthsBetween(this.setupDate, date), rows: this.rowsPublishedOn(date) };
    return null;
  }

  /** The ticker's first report on or after `date`. */
  nextReport(i: number, date: string): string {
    const q = quarterStartOf(date);
    const here = this.reportDatesIn(q)[i]!;
    return here >= date ? here : this.reportDatesIn(addMonths(q, 3))[i]!;
  }

  /** Every ticker's report date in the calendar quarter starting at `quarterStart` (YYYY-MM-01). */
  private reportDatesIn(quarterStart: string): string[] {
    const cached = this.reportDates.get(quarterStart);
    if (cached) return cached;
    const quarterEnd = addDays(addMonths(quarterStart, 3), -1);
    const open = new Set(tradingDaysBetween(quarterStart, quarterEnd));
    const january = quarterStart.slice(5, 7) === '01';
    const qi = quarterIndex(quarterStart);
    const dates = this.params.map((p, i) => {
      // Most report 2-6 weeks into the quarter (annual reports, in the January quarter, a little
      // later); off-cycle fiscal years (NKE, ORCL, MU...) spread over the whole quarter.
      const base = p.offCycle ? 3 + p.earningsOffset * 84 : 13 + p.earningsOffset * 28 + (january ? 6 : 0);
      const jitter = Math.floor(hashUnit(this.seed, STREAM_TAGS.earnings, i, qi) * 7) - 3;
      let d = addDays(quarterStart, Math.round(base) + jitter);
      while (!open.has(d) && d < quarterEnd) d = addDays(d, 1);
      while (!open.has(d)) d = addDays(d, -1);
      return d;
    });
    this.reportDates.set(quarterStart, dates);
    return dates;
  }

  private rowsPublishedOn(date: string): EarningsDatesScheduled['data']['rows'] {
    const rows: EarningsDatesScheduled['data']['rows'] = [];
    const previousMonth = addMonths(date, -1);
    const previous = date === this.setupDate ? null : previousMonth > this.setupDate ? previousMonth : this.setupDate;
    const horizon = addDays(date, EARNINGS_HORIZON_DAYS);
    const previousHorizon = previous === null ? '' : addDays(previous, EARNINGS_HORIZON_DAYS);
    this.tickers.forEach((t, i) => {
      const next = this.nextReport(i, date);
      if (previous === null) {
        rows.push({ ticker: t.symbol, date: next });
        return;
      }
      if (next > horizon) return;
      // The previous publication already carried this report (announcements are monotone, so
      // checking the last one suffices): the setup one carries everything, a monthly one its horizon.
      const before = this.nextReport(i, previous);
      const announced = before === next && (previous === this.setupDate || next <= previousHorizon);
      if (!announced) rows.push({ ticker: t.symbol, date: next });
    });
    return rows;
  }
}

function addMonths(date: string, n: number): string {
  const y = Number(date.slice(0, 4));
  const m = Number(date.slice(5, 7)) - 1 + n;
  return toDateString(new Date(Date.UTC(y, m, Number(date.slice(8, 10)))));
}

function monthsBetween(from: string, to: string): number {
  return (Number(to.slice(0, 4)) - Number(from.slice(0, 4))) * 12 + Number(to.slice(5, 7)) - Number(from.slice(5, 7));
}

function quarterStartOf(date: string): string {
  const m = Number(date.slice(5, 7));
  const qm = m - ((m - 1) % 3);
  return `${date.slice(0, 4)}-${String(qm).padStart(2, '0')}-01`;
}

function quarterIndex(quarterStart: string): number {
  return Number(quarterStart.slice(0, 4)) * 4 + (Number(quarterStart.slice(5, 7)) - 1) / 3;
}
