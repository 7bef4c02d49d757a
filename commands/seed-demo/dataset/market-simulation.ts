import { dayOfWeek } from '../../../src/domain/trading-calendar.js';
import type { SignalPublished } from '../../../src/domain/scores/reference.events.js';
import { seededStream, STREAM_TAGS, type Rng } from './random.js';
import { hotArrays, MARKET_VOL, type TickerParams } from './ticker-params.js';

/** How far (in log points: × ÷ 1.65) a price may stray from its trend before it is pulled back firmly. */
const PRICE_BAND = 0.5;

/** One trading day of the simulation; arrays are indexed like the universe. */
export interface SimDay {
  date: string;
  ms: Float64Array;
  ws: Float64Array;
  close: Float64Array;
  visits: Int32Array;
  signal: { at: string; data: SignalPublished['data'] } | null;
}

/**
 * Scores as mean-reverting processes around long-run means that shift in regimes and converge
 * toward each other, with the closing prices and web visits they drive; one trading day per `step`.
 */
export class MarketSimulation {
  private readonly simulated: SimDay[] = [];
  private readonly dayIndex = new Map<string, number>();
  private readonly hot: ReturnType<typeof hotArrays>;
  private readonly m1: Float64Array;
  private readonly m2: Float64Array;
  private readonly ms: Float64Array;
  private readonly ws: Float64Array;
  private readonly logP: Float64Array;
  private readonly spike: Float64Array;
  private readonly rng: Record<'scores' | 'market' | 'prices' | 'visits', Rng>;

  constructor(seed: number, params: readonly TickerParams[]) {
    this.hot = hotArrays(params);
    this.m1 = Float64Array.from(params, (p) => p.m1);
    this.m2 = Float64Array.from(params, (p) => p.m2);
    this.ms = Float64Array.from(params, (p) => p.m1);
    this.ws = Float64Array.from(params, (p) => p.m2);
    this.logP = Float64Array.from(params, (p) => p.logP0);
    this.spike = new Float64Array(params.length);
    this.rng = {
      scores: seededStream(seed, STREAM_TAGS.scores),
      market: seededStream(seed, STREAM_TAGS.market),
      prices: seededStream(seed, STREAM_TAGS.prices),
      visits: seededStream(seed, STREAM_TAGS.visits),
    };
  }

  /** The simulated days so far, oldest first. */
  get days(): readonly SimDay[] {
    return this.simulated;
  }

  dayOn(date: string): SimDay | undefined {
    const idx = this.dayIndex.get(date);
    return idx === undefined ? undefined : this.simulated[idx];
  }

  /** Simulates `date`, the trading day after the last one simulated. */
  step(date: string): SimDay {
    const n = this.ms.length;
    const t = this.simulated.length;
    const prev = this.simulated[t - 1];
    const { scores, market, prices, visits: visitsRng } = this.rng;
    const day: SimDay = {
      date,
      ms: new Float64Array(n),
      ws: new Float64Array(n),
      close: new Float64Array(n),
      visits: new Int32Array(n),
      signal: null,
    };
    const marketReturn = 0.0003 + MARKET_VOL * market.normal();
    const dow = dayOfWeek(date);
    const month = Number(date.slice(5, 7));
    const weekday = [1, 1.06, 1.02, 1, 0.97, 0.9, 1][dow]!;
    const holidaySeason = month === 11 || month === 12 ? 1.35 : month === 1 ? 0.88 : 1;
    const growth = Math.exp((0.06 * t) / 252);

    const { m1: M1, m2: M2, ms: MS, ws: WS, logP: LOGP, spike: SPIKE } = this;
    const h = this.hot;
    for (let i = 0; i < n; i++) {
      let m1 = M1[i]!;
      let m2 = M2[i]!;
      const gapPrev = prev ? prev.ms[i]! - prev.ws[i]! : 0;
      if (t > 0) {
        // Regime shift: one side's long-run mean jumps; Main Street leads more often.
        if (scores.next() < h.shiftProbability[i]!) {
          const size = scores.uniform(12, 30);
          if (scores.next() < 0.65) m1 = reflectJump(m1, size, scores.next() < 0.5 ? 1 : -1);
          else m2 = reflectJump(m2, size, scores.next() < 0.5 ? 1 : -1);
        }
        // The long-run means converge: Wall Street follows Main Street faster than the reverse.
        const d = m1 - m2;
        m2 += h.wsFollow[i]! * d + 0.25 * scores.normal();
        m1 += -h.msFollow[i]! * d + 0.35 * scores.normal() + 0.002 * (50 - m1);
        m1 = clamp(m1, 6, 94);
        m2 = clamp(m2, 6, 94);
      }
      const msPrev = MS[i]!;
      const wsPrev = WS[i]!;
      let ms = msPrev + h.thetaMs[i]! * (m1 - msPrev) + h.sigmaMs[i]! * scores.normal();
      const ws = wsPrev + h.thetaWs[i]! * (m2 - wsPrev) + h.sigmaWs[i]! * scores.normal();
      // Demand spike: visits jump, Main Street moves with them and partly stays.
      let spike = SPIKE[i]! * 0.55;
      if (t > 0 && visitsRng.next() < 0.004) {
        const s = visitsRng.uniform(0.5, 2);
        spike += s;
        ms += 2 + 3 * s;
        m1 = clamp(m1 + 1.5 * s, 6, 94);
      }
      SPIKE[i] = spike;
      M1[i] = m1;
      M2[i] = m2;
      const msNow = clamp(ms, 0, 100);
      const wsNow = clamp(ws, 0, 100);
      MS[i] = msNow;
      WS[i] = wsNow;
      const msOut = Math.round(msNow * 10) / 10;
      day.ms[i] = msOut;
      day.ws[i] = Math.round(wsNow * 10) / 10;

      // Prices: market beta + idiosyncratic noise, a small drift toward the side Main Street is on
      // (+0.02% a day per 10 points of gap), a weak pull toward the ticker's long-run trend, and a
      // firm one back inside the band around it, so no path wanders off to an implausible level.
      let logP = LOGP[i]!;
      if (t > 0) {
        const trend = h.logP0[i]! + h.drift[i]! * t;
        const off = logP - trend;
        const outside = off > PRICE_BAND ? off - PRICE_BAND : off < -PRICE_BAND ? off + PRICE_BAND : 0;
        logP += 0.00002 * gapPrev + h.beta[i]! * (marketReturn - 0.0003) + h.drift[i]! + h.idio[i]! * prices.normal() - 0.0015 * off - 0.08 * outside;
        LOGP[i] = logP;
      }
      day.close[i] = Math.max(0.5, Math.round(Math.exp(logP) * 100) / 100);

      const season = h.seasonal[i] ? holidaySeason : 1;
      const v = h.visitsBase[i]! * growth * weekday * season * Math.exp(0.015 * (msOut - 50) + 0.08 * visitsRng.normal()) * (1 + spike);
      day.visits[i] = Math.max(1, Math.round(v));
    }

    this.dayIndex.set(date, t);
    this.simulated.push(day);
    return day;
  }
}

export function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** A jump of `size` in direction `sign`, turned around if it would leave 8..92. */
function reflectJump(x: number, size: number, sign: number): number {
  const y = x + sign * size;
  return y < 8 || y > 92 ? clamp(x - sign * size, 8, 92) : y;
}
