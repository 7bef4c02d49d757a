import { addDays } from '../../../src/domain/trading-calendar.js';
import { hashUnit, seededStream, STREAM_TAGS } from './random.js';
import type { TickerRow } from './us-tickers.js';

/** Daily volatility of the market factor every price shares. */
export const MARKET_VOL = 0.009;

/** How one ticker behaves in the simulation, drawn once from the seed. */
export interface TickerParams {
  /** Starting long-run means of Main Street and Wall Street (the scores start there too). */
  m1: number;
  m2: number;
  thetaMs: number;
  sigmaMs: number;
  thetaWs: number;
  sigmaWs: number;
  shiftProbability: number;
  /** How fast Wall Street's long-run mean follows Main Street's, and vice versa. */
  wsFollow: number;
  msFollow: number;
  /** Scores dated before this are `estimated`. */
  coverageStart: string | null;
  logP0: number;
  beta: number;
  /** Daily idiosyncratic volatility (total volatility minus the market part). */
  idio: number;
  visitsBase: number;
  seasonal: boolean;
  offCycle: boolean;
  earningsOffset: number;
}

type HotField =
  | 'thetaMs' | 'sigmaMs' | 'thetaWs' | 'sigmaWs' | 'shiftProbability' | 'wsFollow' | 'msFollow'
  | 'logP0' | 'beta' | 'idio' | 'visitsBase' | 'seasonal';
const HOT_FIELDS: readonly HotField[] = [
  'thetaMs', 'sigmaMs', 'thetaWs', 'sigmaWs', 'shiftProbability', 'wsFollow', 'msFollow',
  'logP0', 'beta', 'idio', 'visitsBase', 'seasonal',
];

const SECTOR_VISITS: Record<string, number> = {
  'Consumer Discretionary': 2.2,
  'Consumer Staples': 1.8,
  'Communication Services': 2.5,
  'Information Technology': 1.2,
  'Financials': 1.0,
  'Health Care': 0.8,
};

/** Every ticker's parameters, in the order of `tickers`. */
export function drawTickerParams(seed: number, start: string, tickers: readonly TickerRow[]): TickerParams[] {
  const setup = seededStream(seed, STREAM_TAGS.setup);
  return tickers.map((t, i) => {
    const level = setup.uniform(32, 68);
    const m1 = level + 6 * setup.normal();
    const m2 = level + 6 * setup.normal();
    const small = Math.min(1, (t.size_rank - 1) / 500);
    const logP0 = Math.log(20) + setup.next() * Math.log(500 / 20);
    const estimatedStart = t.size_rank > 100 && setup.next() < 0.36;
    const coverageStart = estimatedStart ? addDays(start, setup.int(10, 350)) : null;
    return {
      m1,
      m2,
      thetaMs: setup.uniform(0.1, 0.18),
      sigmaMs: setup.uniform(1.5, 2.5),
      thetaWs: setup.uniform(0.07, 0.12),
      sigmaWs: setup.uniform(0.8, 1.4),
      shiftProbability: setup.uniform(1 / 170, 1 / 90),
      wsFollow: setup.uniform(0.02, 0.05),
      msFollow: setup.uniform(0.004, 0.012),
      coverageStart,
      logP0,
      ...volatility(setup.uniform(0.012, 0.02) + 0.01 * small, setup.uniform(0.6, 1.4)),
      visitsBase: (9e6 / Math.pow(t.size_rank, 0.85)) * (SECTOR_VISITS[t.sector] ?? 0.45) * Math.exp(0.5 * setup.normal()),
      seasonal: t.sector === 'Consumer Discretionary' || t.sector === 'Consumer Staples',
      offCycle: hashUnit(seed, STREAM_TAGS.earnings, i, 1) < 0.25,
      earningsOffset: hashUnit(seed, STREAM_TAGS.earnings, i, 2),
    };
  });
}

/** The parameters the daily loop reads, as typed arrays (the inner loop runs ~1.2M times). */
export function hotArrays(params: readonly TickerParams[]): Record<HotField, Float64Array> {
  return Object.fromEntries(HOT_FIELDS.map((f) => [f, Float64Array.from(params, (p) => Number(p[f]))])) as Record<HotField, Float64Array>;
}

function volatility(total: number, beta: number): { beta: number; idio: number } {
  return { beta, idio: Math.sqrt(Math.max(1e-6, total * total - (beta * MARKET_VOL) ** 2)) };
}
