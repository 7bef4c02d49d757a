/**
 * Deterministic demo dataset (docs/operations.md): the publication history of a scores vendor from
 * 2019-01-02 onwards, as event-store appends, each stamped with the instant it belongs to.
 *
 * - Same options → byte-identical appends and event ids (UUIDv5 of seed + stream + revision).
 *   No Math.random, no clock: the caller says which window of history it wants.
 * - The simulation runs day by day from `start` (it is a Markov process), lazily, and a
 *   `DemoDataset` instance caches the simulated days, so asking again for a later window only
 *   simulates the new days. Building the whole history 2019..2026 takes about a second.
 *
 * Timeline of one trading day d (UTC): `ClosePricesRecorded` 21:00, `WebVisitsRecorded` 21:30,
 * `ScoresPublished` 22:00, sometimes a `SignalPublished` 22:05–22:55; a restated row gets a
 * `ScoresRestated` on `scores-d` 1–5 days (24 h – 120 h) after 22:00, at a random second.
 * The universe (`TickerListed`) and the themes (`ThemeDefined`) appear at 00:00 the day before
 * `start` (2019-01-01T00:00:00Z by default); `EarningsDatesScheduled` at 00:00 on that day and on
 * the 1st of every month.
 *
 * Scales: main_street / wall_street / service_score 0..100 (1 decimal); theme `strength` 0..100.
 */
import { createHash } from 'node:crypto';
import type { NewEvent } from '../../../src/core/event-store.port.js';
import { compositeScore } from '../../../src/domain/composite.js';
import { addDays, toDateString, tradingDaysBetween } from '../../../src/domain/trading-calendar.js';
import {
  EARNINGS_STREAM,
  SIGNALS_STREAM,
  TICKERS_STREAM,
  pricesStream,
  themeStream,
  visitsStream,
  type ClosePricesRecorded,
  type EarningsDatesScheduled,
  type SignalPublished,
  type ThemeDefined,
  type TickerListed,
  type WebVisitsRecorded,
} from '../../../src/domain/scores/reference.events.js';
import { scoreStream, type ScoresPublished, type ScoresRestated, type ScoreValues } from '../../../src/domain/scores/score.events.js';
import { EarningsCalendar } from './earnings-calendar.js';
import { MarketSimulation } from './market-simulation.js';
import { Restatements } from './restatements.js';
import { SignalDesk } from './signals.js';
import { loadDemoThemes, themesInUniverse, type DemoTheme } from './themes.js';
import { drawTickerParams, type TickerParams } from './ticker-params.js';
import { loadUsTickers, type TickerRow } from './us-tickers.js';

export type { TickerRow } from './us-tickers.js';

export const DEMO_DEFAULT_SEED = 20190102;
export const DEMO_DEFAULT_START = '2019-01-02';

/** One append of the demo's publication history. */
export interface DemoAppend {
  /** ISO instant (`toISOString()` form) the append belongs to in publication history. */
  at: string;
  streamId: string;
  events: NewEvent[];
}

export interface DemoOptions {
  seed?: number;
  /** First trading day with scores (YYYY-MM-DD). Default 2019-01-02. */
  start?: string;
  /** The universe; default `loadUsTickers()`. */
  tickers?: TickerRow[];
}

const PUBLISH_TIME = { prices: 'T21:00:00.000Z', visits: 'T21:30:00.000Z', scores: 'T22:00:00.000Z' } as const;

/** Order of appends sharing one instant. */
const KIND_RANK = { tickers: 0, theme: 1, earnings: 2, prices: 3, visits: 4, scores: 5, signal: 6, restatement: 7 } as const;
type Kind = keyof typeof KIND_RANK;
interface RankedAppend extends DemoAppend {
  rank: number;
}

const UUID_NAMESPACE = Buffer.from('8b0a6f3e4c5d4e2f9a1b7c6d5e4f3a2b', 'hex');

/** UUIDv5-shaped id from the seed, stream and revision: stable across runs. */
function eventId(seed: number, streamId: string, revision: number): string {
  const h = createHash('sha1').update(UUID_NAMESPACE).update(`${seed}/${streamId}/${revision}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The demo publication history for one set of options; simulates lazily and caches. */
export class DemoDataset {
  readonly seed: number;
  readonly start: string;
  readonly tickers: readonly TickerRow[];
  readonly themes: readonly DemoTheme[];
  /** Instant of the universe, themes and first earnings schedule (00:00Z the day before start). */
  readonly setupAt: string;

  private readonly setupDate: string;
  private readonly params: TickerParams[];
  private readonly simulation: MarketSimulation;
  private readonly restatements: Restatements;
  private readonly earnings: EarningsCalendar;
  private readonly signals: SignalDesk;
  private simulatedThrough: string;

  constructor(options: DemoOptions = {}) {
    this.seed = options.seed ?? DEMO_DEFAULT_SEED;
    this.start = options.start ?? DEMO_DEFAULT_START;
    this.tickers = (options.tickers ?? loadUsTickers()).slice().sort((a, b) => a.size_rank - b.size_rank);
    if (this.tickers.length === 0) throw new RangeError('the demo universe needs at least one ticker');
    this.setupDate = addDays(this.start, -1);
    this.setupAt = `${this.setupDate}T00:00:00.000Z`;
    this.simulatedThrough = this.setupDate;
    const symbolIndex = new Map(this.tickers.map((t, i) => [t.symbol, i]));
    this.themes = themesInUniverse(loadDemoThemes(), symbolIndex);
    this.params = drawTickerParams(this.seed, this.start, this.tickers);
    this.simulation = new MarketSimulation(this.seed, this.params);
    this.restatements = new Restatements(this.seed, (i, date, ms, ws) => this.row(i, date, ms, ws));
    this.earnings = new EarningsCalendar(this.seed, this.tickers, this.params, this.setupDate);
    this.signals = new SignalDesk(this.seed, this.tickers, symbolIndex, this.themes, this.simulation, this.earnings);
  }

  /** Every append whose `at` lies in (fromExclusive, toInclusive], chronological (ties in a fixed order). */
  appendsBetween(fromExclusive: Date | null, toInclusive: Date): DemoAppend[] {
    return [...this.iterateAppends(fromExclusive, toInclusive)];
  }

  /**
   * The same appends as `appendsBetween`, produced lazily one calendar day at a time, so a caller
   * writing the whole history never holds it all in memory.
   */
  *iterateAppends(fromExclusive: Date | null, toInclusive: Date): Generator<DemoAppend> {
    const fromIso = fromExclusive ? fromExclusive.toISOString() : '';
    const toIso = toInclusive.toISOString();
    const lastDate = toDateString(toInclusive);
    if (lastDate < this.setupDate) return;
    const firstDate = fromExclusive && toDateString(fromExclusive) > this.setupDate ? toDateString(fromExclusive) : this.setupDate;
    if (firstDate > lastDate) return;
    this.simulateThrough(lastDate);
    for (let date = firstDate; date <= lastDate; date = addDays(date, 1)) {
      for (const a of this.appendsOn(date)) {
        if (a.at > fromIso && a.at <= toIso) yield { at: a.at, streamId: a.streamId, events: a.events };
      }
    }
  }

  /** Trading days with scores from `start` through `date` (inclusive). */
  tradingDaysThrough(date: string): string[] {
    return tradingDaysBetween(this.start, date);
  }

  private appendsOn(date: string): RankedAppend[] {
    const out: RankedAppend[] = [];
    const push = (kind: Kind, at: string, streamId: string, events: NewEvent[]) =>
      out.push({ at, streamId, events, rank: KIND_RANK[kind] });

    if (date === this.setupDate) {
      push(
        'tickers',
        this.setupAt,
        TICKERS_STREAM,
        this.tickers.map((t, i) =>
          this.event<TickerListed>(TICKERS_STREAM, i, 'TickerListed', {
            symbol: t.symbol,
            company: t.company,
            sector: t.sector,
            size_rank: t.size_rank,
          }),
        ),
      );
      for (const th of this.themes) {
        const stream = themeStream(th.slug);
        push('theme', this.setupAt, stream, [
          this.event<ThemeDefined>(stream, 0, 'ThemeDefined', {
            slug: th.slug,
            name: th.name,
            description: th.description,
            strength: th.strength,
            constituents: th.constituents.map((c) => ({ ticker: c.ticker, relationship: c.relationship })),
          }),
        ]);
      }
    }
    const schedule = this.earnings.publicationOn(date);
    if (schedule) {
      push('earnings', `${date}T00:00:00.000Z`, EARNINGS_STREAM, [
        this.event<EarningsDatesScheduled>(EARNINGS_STREAM, schedule.revision, 'EarningsDatesScheduled', {
          rows: schedule.rows,
        }),
      ]);
    }
    const day = this.simulation.dayOn(date);
    if (day) {
      const ps = pricesStream(date);
      push('prices', date + PUBLISH_TIME.prices, ps, [
        this.event<ClosePricesRecorded>(ps, 0, 'ClosePricesRecorded', {
          date,
          closes: this.tickers.map((t, i) => ({ ticker: t.symbol, close: day.close[i]! })),
        }),
      ]);
      const vs = visitsStream(date);
      push('visits', date + PUBLISH_TIME.visits, vs, [
        this.event<WebVisitsRecorded>(vs, 0, 'WebVisitsRecorded', {
          date,
          visits: this.tickers.map((t, i) => ({ ticker: t.symbol, visits: day.visits[i]! })),
        }),
      ]);
      const ss = scoreStream(date);
      const publishedAt = date + PUBLISH_TIME.scores;
      push('scores', publishedAt, ss, [
        this.event<ScoresPublished>(ss, 0, 'ScoresPublished', {
          date,
          published_at: publishedAt,
          rows: this.tickers.map((t, i) => this.row(i, date, day.ms[i]!, day.ws[i]!)),
        }),
      ]);
      if (day.signal) {
        push('signal', day.signal.at, SIGNALS_STREAM, [
          this.event<SignalPublished>(SIGNALS_STREAM, day.signal.data.id - 1, 'SignalPublished', day.signal.data),
        ]);
      }
    }
    for (const batch of this.restatements.publishedOn(date)) {
      const ss = scoreStream(batch.date);
      push('restatement', batch.at, ss, [
        this.event<ScoresRestated>(ss, batch.revision, 'ScoresRestated', {
          date: batch.date,
          restated_at: batch.at,
          rows: batch.rows,
        }),
      ]);
    }
    return out.sort((a, b) =>
      a.at < b.at ? -1 : a.at > b.at ? 1 : a.rank - b.rank || (a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0),
    );
  }

  private event<E extends { type: string; data: unknown }>(streamId: string, revision: number, type: E['type'], data: E['data']): NewEvent {
    return { id: eventId(this.seed, streamId, revision), type, data };
  }

  private row(i: number, date: string, ms: number, ws: number): ScoreValues {
    const coverageStart = this.params[i]!.coverageStart;
    return {
      ticker: this.tickers[i]!.symbol,
      main_street: ms,
      wall_street: ws,
      service_score: compositeScore(ms, ws),
      estimated: coverageStart !== null && date < coverageStart,
    };
  }

  private simulateThrough(date: string): void {
    if (date <= this.simulatedThrough) return;
    for (const d of tradingDaysBetween(addDays(this.simulatedThrough, 1), date)) {
      if (d < this.start) continue;
      const t = this.simulation.days.length;
      const day = this.simulation.step(d);
      this.restatements.draw(day, d + PUBLISH_TIME.scores);
      this.signals.maybeSignal(day, t);
    }
    this.simulatedThrough = date;
  }
}

/** Convenience: a fresh dataset's appends in (fromExclusive, toInclusive]. Prefer a long-lived `DemoDataset`. */
export function demoAppendsBetween(fromExclusive: Date | null, toInclusive: Date, options?: DemoOptions): DemoAppend[] {
  return new DemoDataset(options).appendsBetween(fromExclusive, toInclusive);
}
