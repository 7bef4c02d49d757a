import type { SignalAlertType } from '../../../src/domain/scores/reference.events.js';
import { round1 } from '../../../src/domain/composite.js';
import { addDays, dayOfWeek, tradingDaysBetween } from '../../../src/domain/trading-calendar.js';
import type { EarningsCalendar } from './earnings-calendar.js';
import type { MarketSimulation, SimDay } from './market-simulation.js';
import { seededStream, STREAM_TAGS, type Rng } from './random.js';
import type { DemoTheme } from './themes.js';
import type { TickerRow } from './us-tickers.js';

const DAY_MS = 86_400_000;

export class SignalDesk {
  private readonly rng: Rng;
  private readonly themesOf: string[][];
  private weekPlan = new Set<string>();
  private weekKey = '';
  private signalCount = 0;
  private readonly recentSignalTickers: string[] = [];

  constructor(
    seed: number,
    private readonly tickers: readonly TickerRow[],
    private readonly symbolIndex: ReadonlyMap<string, number>,
    private readonly themes: readonly DemoTheme[],
    private readonly simulation: MarketSimulation,
    private readonly earnings: EarningsCalendar,
  ) {
    this.rng = seededStream(seed, STREAM_TAGS.signals);
    this.themesOf = tickers.map((t) =>
      themes.filter((th) => th.constituents.some((c) => c.ticker === t.symbol)).map((th) => th.slug),
    );
  }

  /** Sets `day.signal` (`t`: the day's index in the simulation) when this week's plan picked the day. */
  maybeSignal(day: SimDay, t: number): void {
    const rng = this.rng;
    const monday = addDays(day.date, 1 - dayOfWeek(day.date));
    if (monday !== this.weekKey) {
      this.weekKey = monday;
      const week = tradingDaysBetween(day.date, addDays(monday, 4));
      const count = Math.min(week.length, rng.int(2, 5));
      const chosen = new Set<string>();
      while (chosen.size < count) chosen.add(rng.pick(week));
      this.weekPlan = chosen;
    }
    if (!this.weekPlan.has(day.date)) return;
    const at = `${day.date}T22:${String(rng.int(5, 55)).padStart(2, '0')}:00.000Z`;
    const roll = rng.next();
    const kind =
      t < 20
        ? 'divergence_alert'
        : roll < 0.3
          ? 'divergence_alert'
          : roll < 0.55
            ? 'demand_surge'
            : roll < 0.75
              ? 'sentiment_shift'
              : roll < 0.9
                ? 'earnings_watch'
                : 'theme_rotation';
    const built = this.buildSignal(kind, day, t, rng) ?? this.buildSignal('divergence_alert', day, t, rng)!;
    this.signalCount += 1;
    day.signal = {
      at,
      data: { id: this.signalCount, alert_type: built.type, content: built.content, tickers: built.tickers, themes: built.themes, created_at: at },
    };
    this.recentSignalTickers.push(...built.tickers);
    if (this.recentSignalTickers.length > 30) this.recentSignalTickers.splice(0, this.recentSignalTickers.length - 30);
  }

  /** Picks among the five strongest candidates not signalled lately. */
  private pickTop(score: (i: number) => number, rng: Rng, filter: (i: number) => boolean = () => true): number | null {
    const recent = new Set(this.recentSignalTickers);
    // Top five by score (ties: lower index first), kept sorted descending.
    const top: { i: number; s: number }[] = [];
    for (let i = 0; i < this.tickers.length; i++) {
      if (recent.has(this.tickers[i]!.symbol) || !filter(i)) continue;
      const s = score(i);
      if (top.length === 5 && s <= top[4]!.s) continue;
      let k = top.length < 5 ? top.length : 4;
      top[k] = { i, s };
      while (k > 0 && top[k - 1]!.s < s) {
        top[k] = top[k - 1]!;
        top[k - 1] = { i, s };
        k--;
      }
    }
    return top.length === 0 ? null : rng.pick(top).i;
  }

  private buildSignal(
    type: SignalAlertType,
    day: SimDay,
    t: number,
    rng: Rng,
  ): { type: SignalAlertType; content: string; tickers: string[]; themes: string[] } | null {
    const sym = (i: number) => this.tickers[i]!.symbol;
    const gapOf = (d: SimDay, i: number) => round1(d.ms[i]! - d.ws[i]!);
    const back = (k: number) => this.simulation.days[Math.max(0, t - k)]!;
    const one = (i: number, content: string) => ({ type, content, tickers: [sym(i)], themes: this.themesOf[i]! });

    switch (type) {
      case 'divergence_alert': {
        const i = this.pickTop((j) => Math.abs(gapOf(day, j)), rng)!;
        const gap = gapOf(day, i);
        const lookback = Math.min(5, t);
        const widened = round1(Math.abs(gap) - Math.abs(gapOf(back(lookback), i)));
        const sector = this.tickers[i]!.sector;
        let sectorMax = true;
        for (let j = 0; j < this.tickers.length; j++) {
          if (this.tickers[j]!.sector === sector && Math.abs(gapOf(day, j)) > Math.abs(gap)) sectorMax = false;
        }
        const change =
          lookback > 0 ? ` The gap has ${widened >= 0 ? 'widened' : 'narrowed'} ${fmt(Math.abs(widened))} points over ${lookback} sessions.` : '';
        const where = sectorMax ? ` It is the widest in ${sector} today.` : '';
        return one(
          i,
          `${gap > 0 ? 'Bullish' : 'Bearish'} divergence on ${sym(i)} (${this.tickers[i]!.company}): Main Street at ${fmt(day.ms[i]!)} vs Wall Street at ${fmt(day.ws[i]!)}, a ${signed(gap)}-point gap.${change}${where}`,
        );
      }
      case 'demand_surge': {
        const b = back(5);
        const i = this.pickTop((j) => day.ms[j]! - b.ms[j]!, rng);
        if (i === null) return null;
        const rise = round1(day.ms[i]! - b.ms[i]!);
        if (rise <= 0) return null;
        const wsMove = round1(day.ws[i]! - b.ws[i]!);
        let avg = 0;
        for (let k = 1; k <= 20; k++) avg += back(k).visits[i]!;
        avg /= 20;
        const visitsChange = Math.round((day.visits[i]! / avg - 1) * 100);
        const ws =
          Math.abs(wsMove) < 2
            ? `while Wall Street sentiment held at ${fmt(day.ws[i]!)}`
            : `while Wall Street sentiment moved ${signed(wsMove)} to ${fmt(day.ws[i]!)}`;
        return one(
          i,
          `Main Street demand for ${sym(i)} jumped ${fmt(rise)} points over 5 sessions to ${fmt(day.ms[i]!)} ${ws}; web visits are ${visitsChange >= 0 ? 'up' : 'down'} ${Math.abs(visitsChange)}% on their 20-session average.`,
        );
      }
      case 'sentiment_shift': {
        const b = back(5);
        const i = this.pickTop((j) => Math.abs(day.ws[j]! - b.ws[j]!), rng);
        if (i === null) return null;
        const move = round1(day.ws[i]! - b.ws[i]!);
        const gap = gapOf(day, i);
        return one(
          i,
          `Wall Street sentiment on ${sym(i)} ${move >= 0 ? 'rose' : 'fell'} ${fmt(Math.abs(move))} points over 5 sessions to ${fmt(day.ws[i]!)}; Main Street stands at ${fmt(day.ms[i]!)}, leaving a ${signed(gap)}-point gap.`,
        );
      }
      case 'earnings_watch': {
        const horizon = addDays(day.date, 10);
        const upcoming = new Map<number, string>();
        const tomorrow = addDays(day.date, 1);
        for (let j = 0; j < this.tickers.length; j++) {
          const next = this.earnings.nextReport(j, tomorrow);
          if (next <= horizon) upcoming.set(j, next);
        }
        const i = this.pickTop((j) => Math.abs(gapOf(day, j)), rng, (j) => upcoming.has(j));
        if (i === null) return null;
        const date = upcoming.get(i)!;
        const days = Math.round((Date.parse(date) - Date.parse(day.date)) / DAY_MS);
        const gap = gapOf(day, i);
        const lead = gap >= 0 ? 'leads' : 'trails';
        return one(
          i,
          `${sym(i)} reports on ${date} (in ${days} day${days === 1 ? '' : 's'}); going in, Main Street (${fmt(day.ms[i]!)}) ${lead} Wall Street (${fmt(day.ws[i]!)}) by ${fmt(Math.abs(gap))} points.`,
        );
      }
      case 'theme_rotation': {
        const b = back(20);
        let best: { th: DemoTheme; idx: number[]; delta: number } | null = null;
        for (const th of this.themes) {
          const idx = th.constituents.map((c) => this.symbolIndex.get(c.ticker)!);
          const delta = mean(idx.map((j) => day.ms[j]!)) - mean(idx.map((j) => b.ms[j]!));
          if (!best || Math.abs(delta) > Math.abs(best.delta)) best = { th, idx, delta };
        }
        if (!best) return null;
        const { th, idx } = best;
        const dir = best.delta >= 0 ? 1 : -1;
        const movers = idx
          .map((j) => ({ j, move: round1(day.ms[j]! - b.ms[j]!) }))
          .sort((x, y) => dir * (y.move - x.move) || x.j - y.j)
          .slice(0, 3);
        const avgNow = round1(mean(idx.map((j) => day.ms[j]!)));
        const wsMove = round1(mean(idx.map((j) => day.ws[j]!)) - mean(idx.map((j) => b.ws[j]!)));
        const led = movers.map((m) => `${sym(m.j)} (${signed(m.move)})`).join(', ');
        return {
          type,
          content: `${th.name}: the average Main Street score across ${idx.length} constituents ${dir > 0 ? 'rose' : 'fell'} ${fmt(Math.abs(round1(best.delta)))} points over 20 sessions to ${fmt(avgNow)}, led by ${led}; the Wall Street average moved ${signed(wsMove)}.`,
          tickers: movers.map((m) => sym(m.j)),
          themes: [th.slug],
        };
      }
      default:
        return null;
    }
  }
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function fmt(x: number): string {
  return x.toFixed(1);
}

function signed(x: number): string {
  return `${x >= 0 ? '+' : '-'}${Math.abs(x).toFixed(1)}`;
}
