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
  /** Log of the first close. */
  logP0: number;
  /** The price's long-run trend, in log points a trading day (the path is pulled back toward logP0 + drift × t). */
  drift: number;
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
  | 'logP0' | 'drift' | 'beta' | 'idio' | 'visitsBase' | 'seasonal';
const HOT_FIELDS: readonly HotField[] = [
  'thetaMs', 'sigmaMs', 'thetaWs', 'sigmaWs', 'shiftProbability', 'wsFollow', 'msFollow',
  'logP0', 'drift', 'beta', 'idio', 'visitsBase', 'seasonal',
];

const SECTOR_VISITS: Record<string, number> = {
  'Consumer Discretionary': 2.2,
  'Consumer Staples': 1.8,
  'Communication Services': 2.5,
  'Information Technology': 1.2,
  'Financials': 1.0,
  'Health Care': 0.8,
};

/**
 * A sector's typical share price at the start (USD, early 2019), daily volatility and market beta:
 * utilities and staples quiet and low-beta, technology and energy lively.
 */
const SECTOR_PRICES: Record<string, { price: number; vol: number; beta: number }> = {
  'Information Technology': { price: 115, vol: 0.018, beta: 1.2 },
  'Communication Services': { price: 80, vol: 0.017, beta: 1.05 },
  'Consumer Discretionary': { price: 100, vol: 0.017, beta: 1.15 },
  'Consumer Staples': { price: 70, vol: 0.011, beta: 0.6 },
  'Health Care': { price: 110, vol: 0.015, beta: 0.85 },
  'Financials': { price: 75, vol: 0.015, beta: 1.1 },
  'Industrials': { price: 110, vol: 0.015, beta: 1.05 },
  'Energy': { price: 55, vol: 0.02, beta: 1.0 },
  'Utilities': { price: 65, vol: 0.011, beta: 0.5 },
  'Real Estate': { price: 85, vol: 0.014, beta: 0.8 },
  'Materials': { price: 85, vol: 0.016, beta: 1.0 },
};
const OTHER_SECTOR = { price: 80, vol: 0.016, beta: 1.0 };

/** Bounds of a ticker's long-run price trend, a year. */
const DRIFT_PER_YEAR = { lo: -0.04, hi: 0.1 } as const;

/**
 * The price part of a ticker's parameters. `draws` are three uniform [0, 1) draws of the setup
 * stream (start level, volatility, beta) and one of the ticker's own hash (trend): the start is
 * the sector's typical price, higher for the largest companies (× 1.3 at the top, × 0.7 at rank
 * 500), spread × ÷ 1.7; volatility is the sector's × 0.8–1.2, plus up to 0.8 points for the smallest.
 */
function priceParams(sector: string, sizeRank: number, draws: { level: number; vol: number; beta: number; drift: number }) {
  const s = SECTOR_PRICES[sector] ?? OTHER_SECTOR;
  const small = Math.min(1, (sizeRank - 1) / 500);
  const logP0 = Math.log(s.price) + Math.log(1.3) + small * Math.log(0.7 / 1.3) + (2 * draws.level - 1) * Math.log(1.7);
  const drift = (DRIFT_PER_YEAR.lo + draws.drift * (DRIFT_PER_YEAR.hi - DRIFT_PER_YEAR.lo)) / 252;
  return { logP0, drift, ...volatility(s.vol * (0.8 + 0.4 * draws.vol) + 0.008 * small, s.beta * (0.75 + 0.5 * draws.beta)) };
}

/** Every ticker's parameters, in the order of `tickers`. */
export function drawTickerParams(seed: number, start: string, tickers: readonly TickerRow[]): TickerParams[] {
  const setup = seededStream(seed, STREAM_TAGS.setup);
  return tickers.map((t, i) => {
    const level = setup.uniform(32, 68);
    const m1 = level + 6 * setup.normal();
    const m2 = level + 6 * setup.normal();
    const priceLevel = setup.next();
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
      // The draws keep their places in the setup stream, so the scores stay as they were.
      ...priceParams(t.sector, t.size_rank, { level: priceLevel, vol: setup.next(), beta: setup.next(), drift: hashUnit(seed, STREAM_TAGS.trend, i) }),
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
