/**
 * Deterministic demo dataset (DESIGN §4): the publication history of a scores vendor from
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
 * Earnings: each ticker reports once a quarter on a fixed fiscal rhythm (most in the reporting
 * season 2–6 weeks into a calendar quarter; a quarter of them off-cycle, anywhere in the quarter,
 * like NKE or ORCL). The monthly event carries, for every ticker whose previous report has passed, its
 * next report date once that date is at most 75 days away. So every ticker's next date is known
 * at least ~6 weeks ahead, and `/v1/earnings` over 14..60 days is never empty.
 *
 * Scales: main_street / wall_street / service_score 0..100 (1 decimal); theme `strength` 0..100.
 */
import { createHash } from 'node:crypto';
import type { NewEvent } from '../../../src/core/event-store.port.js';
import { compositeScore, round1 } from '../../../src/domain/composite.js';
import { addDays, dayOfWeek, toDateString, tradingDaysBetween } from '../../../src/domain/trading-calendar.js';
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
} from '../../../src/events/reference-events.js';
import { scoreStream, type ScoresPublished, type ScoresRestated, type ScoreValues } from '../../../src/events/score-events.js';
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

/** A theme basket; constituents missing from a custom universe are dropped. */
export interface DemoTheme {
  slug: string;
  name: string;
  description: string;
  /** 0..100: how strongly the theme drives its constituents. */
  strength: number;
  constituents: { ticker: string; relationship: 'core' | 'supplier' | 'beneficiary' | 'adjacent' | 'headwind' }[];
}

type Rel = DemoTheme['constituents'][number]['relationship'];
const basket = (spec: Partial<Record<Rel, string>>): DemoTheme['constituents'] =>
  Object.entries(spec).flatMap(([relationship, list]) =>
    (list ?? '').split(' ').filter(Boolean).map((ticker) => ({ ticker, relationship: relationship as Rel })),
  );

export const DEMO_THEMES: readonly DemoTheme[] = [
  {
    slug: 'ai-infrastructure',
    name: 'AI infrastructure',
    description: 'Compute, networking, memory, power and data-centre capacity behind AI training and inference.',
    strength: 88,
    constituents: basket({
      core: 'NVDA AVGO AMD MRVL ANET SMCI DELL',
      supplier: 'MU VRT ETN GEV COHR CIEN',
      beneficiary: 'CEG VST',
      adjacent: 'EQIX DLR PSTG MSFT',
    }),
  },
  {
    slug: 'glp1-obesity',
    name: 'GLP-1 & obesity',
    description: 'Weight-loss drugs, their supply chain, and the consumer categories they reshape.',
    strength: 81,
    constituents: basket({
      core: 'LLY AMGN VKTX',
      supplier: 'WST TMO',
      adjacent: 'HIMS DXCM PODD',
      beneficiary: 'PLNT',
      headwind: 'MDLZ HSY PEP',
    }),
  },
  {
    slug: 'cloud-software',
    name: 'Cloud software',
    description: 'Subscription software delivered from the cloud: CRM, data, observability, collaboration.',
    strength: 72,
    constituents: basket({
      core: 'CRM NOW ADBE WDAY SNOW DDOG MDB HUBS TEAM INTU ADSK TWLO',
      adjacent: 'ORCL ZM DOCU PATH IOT DT GTLB CFLT',
    }),
  },
  {
    slug: 'ev-batteries',
    name: 'EV & batteries',
    description: 'Electric-vehicle makers, battery materials and the auto-electronics supply chain.',
    strength: 64,
    constituents: basket({
      core: 'TSLA RIVN LCID QS',
      supplier: 'ALB MP APTV BWA ON NXPI',
      adjacent: 'GM F',
    }),
  },
  {
    slug: 'consumer-brands',
    name: 'Consumer brands',
    description: 'Household and snack brands whose shelf demand shows up in visits before it shows up in results.',
    strength: 58,
    constituents: basket({
      core: 'PG KO PEP CL KMB CHD EL CLX MDLZ HSY KVUE',
      adjacent: 'ELF CELH MNST KDP GIS',
    }),
  },
  {
    slug: 'streaming',
    name: 'Streaming & digital media',
    description: 'Video, gaming and live entertainment competing for screen time, and the ad tech around them.',
    strength: 67,
    constituents: basket({
      core: 'NFLX DIS ROKU WBD',
      adjacent: 'CMCSA CHTR FOXA GOOGL AMZN RBLX EA TTWO LYV',
      supplier: 'TTD',
    }),
  },
  {
    slug: 'travel-rebound',
    name: 'Travel rebound',
    description: 'Airlines, cruise lines, hotels and booking platforms riding leisure and business travel demand.',
    strength: 70,
    constituents: basket({
      core: 'BKNG ABNB EXPE MAR HLT H RCL CCL NCLH DAL UAL LUV',
      adjacent: 'ALK JBLU LVS WYNN TRIP',
      beneficiary: 'UBER',
    }),
  },
  {
    slug: 'cybersecurity',
    name: 'Cybersecurity',
    description: 'Endpoint, network, identity and cloud security platforms.',
    strength: 76,
    constituents: basket({
      core: 'PANW CRWD FTNT ZS NET OKTA S TENB',
      adjacent: 'GEN AKAM CSCO MSFT',
    }),
  },
  {
    slug: 'semiconductors',
    name: 'Semiconductors',
    description: 'Chip designers, analog and power semis, and the equipment makers that supply the fabs.',
    strength: 83,
    constituents: basket({
      core: 'NVDA AMD AVGO QCOM TXN INTC MU ADI MCHP NXPI ON MPWR LSCC QRVO SWKS',
      supplier: 'AMAT LRCX KLAC TER ENTG',
    }),
  },
  {
    slug: 'payments-fintech',
    name: 'Payments & fintech',
    description: 'Card networks, processors, wallets, buy-now-pay-later and retail brokerage.',
    strength: 66,
    constituents: basket({
      core: 'V MA PYPL XYZ AFRM SOFI FI FIS GPN',
      adjacent: 'AXP COIN HOOD TOST CPAY JKHY',
    }),
  },
  {
    slug: 'restaurants',
    name: 'Restaurants',
    description: 'Quick-service, fast-casual and casual-dining chains, where foot traffic leads reported sales.',
    strength: 61,
    constituents: basket({
      core: 'MCD SBUX CMG YUM DPZ DRI TXRH WING CAVA SHAK SG BROS EAT',
      beneficiary: 'DASH',
      supplier: 'SYY',
    }),
  },
  {
    slug: 'home-improvement',
    name: 'Home improvement',
    description: 'Retailers, building products and suppliers tied to remodelling and housing turnover.',
    strength: 55,
    constituents: basket({
      core: 'HD LOW SHW MAS FND POOL TSCO WSM RH',
      supplier: 'BLDR MHK LII',
      adjacent: 'DHI LEN',
    }),
  },
  {
    slug: 'luxury-premium',
    name: 'Luxury & premium',
    description: 'Premium apparel, beauty and experiences bought by high-income consumers.',
    strength: 52,
    constituents: basket({
      core: 'TPR RL EL LULU DECK RH',
      adjacent: 'ULTA WYNN LVS NKE',
      beneficiary: 'AXP',
    }),
  },
  {
    slug: 'energy-transition',
    name: 'Energy transition',
    description: 'Solar, storage, hydrogen, grid equipment and clean power generation.',
    strength: 63,
    constituents: basket({
      core: 'NEE FSLR ENPH SEDG RUN NXT PLUG BE',
      beneficiary: 'GEV CEG VST AES',
      supplier: 'ETN PWR ALB',
      adjacent: 'TSLA',
    }),
  },
  {
    slug: 'value-retail',
    name: 'Value retail',
    description: 'Discounters and warehouse clubs that gain share when shoppers trade down.',
    strength: 59,
    constituents: basket({
      core: 'WMT COST TJX ROST BURL DG DLTR FIVE BJ TGT',
      adjacent: 'KR AMZN',
    }),
  },
];

const PUBLISH_TIME = { prices: 'T21:00:00.000Z', visits: 'T21:30:00.000Z', scores: 'T22:00:00.000Z' } as const;
const DAY_MS = 86_400_000;
const RESTATE_PROBABILITY = 0.01;
const EARNINGS_HORIZON_DAYS = 75;

/** Order of appends sharing one instant. */
const KIND_RANK = { tickers: 0, theme: 1, earnings: 2, prices: 3, visits: 4, scores: 5, signal: 6, restatement: 7 } as const;
type Kind = keyof typeof KIND_RANK;
interface RankedAppend extends DemoAppend {
  rank: number;
}

// ---------------------------------------------------------------------------------------------
// Randomness: seeded streams (mulberry32) and a stateless hash for values that must not depend on
// how far the simulation has run (earnings dates).

class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  /** Standard normal draw by inverse-CDF table lookup (fast; tails truncated near ±4σ). */
  normal(): number {
    const x = this.next() * NORMAL_TABLE_SIZE;
    const k = x | 0;
    const lo = NORMAL_TABLE[k]!;
    return lo + (NORMAL_TABLE[k + 1]! - lo) * (x - k);
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

const NORMAL_TABLE_SIZE = 16_384;
/**
 * Inverse normal CDF at the midpoints of NORMAL_TABLE_SIZE equal-probability cells (Acklam's
 * rational approximation), plus one extra end value for interpolation. A constant, computed once.
 */
const NORMAL_TABLE: Float64Array = (() => {
  const table = new Float64Array(NORMAL_TABLE_SIZE + 1);
  for (let k = 0; k <= NORMAL_TABLE_SIZE; k++) table[k] = inverseNormalCdf((Math.min(k, NORMAL_TABLE_SIZE - 1) + 0.5) / NORMAL_TABLE_SIZE);
  return table;
})();

function inverseNormalCdf(p: number): number {
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const [a0, a1, a2, a3, a4, a5] = a as [number, number, number, number, number, number];
  const [b0, b1, b2, b3, b4] = b as [number, number, number, number, number];
  const [c0, c1, c2, c3, c4, c5] = c as [number, number, number, number, number, number];
  const [d0, d1, d2, d3] = d as [number, number, number, number];
  const tail = (q: number) => (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return ((((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q) / (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1);
}

function hash32(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    h ^= h >>> 12;
    h = Math.imul(h, 0x297a2d39);
    h ^= h >>> 15;
  }
  return h >>> 0;
}
const hashUnit = (...parts: number[]) => hash32(...parts) / 4294967296;

const STREAM_TAGS = { setup: 1, scores: 2, market: 3, prices: 4, visits: 5, restate: 6, signals: 7, earnings: 8 } as const;

const UUID_NAMESPACE = Buffer.from('8b0a6f3e4c5d4e2f9a1b7c6d5e4f3a2b', 'hex');

/** UUIDv5-shaped id from the seed, stream and revision: stable across runs. */
function eventId(seed: number, streamId: string, revision: number): string {
  const h = createHash('sha1').update(UUID_NAMESPACE).update(`${seed}/${streamId}/${revision}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

// ---------------------------------------------------------------------------------------------

interface RestateBatch {
  /** Score date restated. */
  date: string;
  at: string;
  /** Revision of the event inside `scores-<date>` (publication is 0). */
  revision: number;
  rows: ScoreValues[];
}

interface SimDay {
  date: string;
  ms: Float64Array;
  ws: Float64Array;
  close: Float64Array;
  visits: Int32Array;
  signal: { at: string; data: SignalPublished['data'] } | null;
}

interface TickerParams {
  thetaMs: number;
  sigmaMs: number;
  thetaWs: number;
  sigmaWs: number;
  shiftProbability: number;
  /** How fast Wall Street's long-run mean follows Main Street's, and vice versa. */
  wsFollow: number;
  msFollow: number;
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
  /** The simulation's per-ticker parameters as typed arrays (the inner loop runs ~1.2M times). */
  private readonly hot: Record<HotField, Float64Array>;
  private readonly themesOf: string[][];
  private readonly symbolIndex: Map<string, number>;

  // Simulation state (advanced one trading day at a time).
  private readonly days: SimDay[] = [];
  private readonly dayIndex = new Map<string, number>();
  private simulatedThrough: string;
  private readonly m1: Float64Array;
  private readonly m2: Float64Array;
  private readonly ms: Float64Array;
  private readonly ws: Float64Array;
  private readonly logP: Float64Array;
  private readonly spike: Float64Array;
  private readonly rng: Record<'scores' | 'market' | 'prices' | 'visits' | 'restate' | 'signals', Rng>;
  private readonly restatementsOn = new Map<string, RestateBatch[]>();
  private readonly reportDates = new Map<string, string[]>();
  private weekPlan = new Set<string>();
  private weekKey = '';
  private signalCount = 0;
  private readonly recentSignalTickers: string[] = [];

  constructor(options: DemoOptions = {}) {
    this.seed = options.seed ?? DEMO_DEFAULT_SEED;
    this.start = options.start ?? DEMO_DEFAULT_START;
    this.tickers = (options.tickers ?? loadUsTickers()).slice().sort((a, b) => a.size_rank - b.size_rank);
    if (this.tickers.length === 0) throw new RangeError('the demo universe needs at least one ticker');
    this.setupDate = addDays(this.start, -1);
    this.setupAt = `${this.setupDate}T00:00:00.000Z`;
    this.simulatedThrough = this.setupDate;
    this.symbolIndex = new Map(this.tickers.map((t, i) => [t.symbol, i]));
    this.themes = DEMO_THEMES.map((t) => ({
      ...t,
      constituents: t.constituents.filter((c) => this.symbolIndex.has(c.ticker)),
    })).filter((t) => t.constituents.length > 0);
    this.themesOf = this.tickers.map((t) =>
      this.themes.filter((th) => th.constituents.some((c) => c.ticker === t.symbol)).map((th) => th.slug),
    );

    const n = this.tickers.length;
    const setup = new Rng(hash32(this.seed, STREAM_TAGS.setup));
    this.m1 = new Float64Array(n);
    this.m2 = new Float64Array(n);
    this.ms = new Float64Array(n);
    this.ws = new Float64Array(n);
    this.logP = new Float64Array(n);
    this.spike = new Float64Array(n);
    this.params = this.tickers.map((t, i) => {
      const level = setup.uniform(32, 68);
      this.m1[i] = level + 6 * setup.normal();
      this.m2[i] = level + 6 * setup.normal();
      this.ms[i] = this.m1[i]!;
      this.ws[i] = this.m2[i]!;
      const small = Math.min(1, (t.size_rank - 1) / 500);
      const logP0 = Math.log(20) + setup.next() * Math.log(500 / 20);
      this.logP[i] = logP0;
      const estimatedStart = t.size_rank > 100 && setup.next() < 0.36;
      const coverageStart = estimatedStart ? addDays(this.start, setup.int(10, 350)) : null;
      return {
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
        offCycle: hashUnit(this.seed, STREAM_TAGS.earnings, i, 1) < 0.25,
        earningsOffset: hashUnit(this.seed, STREAM_TAGS.earnings, i, 2),
      };
    });
    this.hot = Object.fromEntries(
      HOT_FIELDS.map((f) => [f, Float64Array.from(this.params, (p) => Number(p[f]))]),
    ) as Record<HotField, Float64Array>;
    const tag = (k: number) => new Rng(hash32(this.seed, k));
    this.rng = {
      scores: tag(STREAM_TAGS.scores),
      market: tag(STREAM_TAGS.market),
      prices: tag(STREAM_TAGS.prices),
      visits: tag(STREAM_TAGS.visits),
      restate: tag(STREAM_TAGS.restate),
      signals: tag(STREAM_TAGS.signals),
    };
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

  // --- one calendar day of appends -------------------------------------------------------------

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
    if (date === this.setupDate || (date > this.setupDate && date.endsWith('-01'))) {
      const revision = date === this.setupDate ? 0 : monthsBetween(this.setupDate, date);
      push('earnings', `${date}T00:00:00.000Z`, EARNINGS_STREAM, [
        this.event<EarningsDatesScheduled>(EARNINGS_STREAM, revision, 'EarningsDatesScheduled', {
          rows: this.earningsPublishedOn(date),
        }),
      ]);
    }
    const idx = this.dayIndex.get(date);
    if (idx !== undefined) {
      const day = this.days[idx]!;
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
    for (const batch of this.restatementsOn.get(date) ?? []) {
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

  // --- earnings --------------------------------------------------------------------------------

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

  /** The ticker's first report on or after `date`. */
  private nextReport(i: number, date: string): string {
    const q = quarterStartOf(date);
    const here = this.reportDatesIn(q)[i]!;
    return here >= date ? here : this.reportDatesIn(addMonths(q, 3))[i]!;
  }

  /** Rows of the `EarningsDatesScheduled` published at 00:00 on `date`. */
  private earningsPublishedOn(date: string): EarningsDatesScheduled['data']['rows'] {
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

  // --- simulation ------------------------------------------------------------------------------

  private simulateThrough(date: string): void {
    if (date <= this.simulatedThrough) return;
    for (const d of tradingDaysBetween(addDays(this.simulatedThrough, 1), date)) {
      if (d >= this.start) this.simulateDay(d);
    }
    this.simulatedThrough = date;
  }

  private simulateDay(date: string): void {
    const n = this.tickers.length;
    const t = this.days.length;
    const prev = this.days[t - 1];
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
      // (+0.02% a day per 10 points of gap), and a weak pull toward the long-run trend.
      let logP = LOGP[i]!;
      if (t > 0) {
        const trend = h.logP0[i]! + 0.0003 * t;
        logP += 0.00002 * gapPrev + h.beta[i]! * (marketReturn - 0.0003) + 0.0003 + h.idio[i]! * prices.normal() - 0.0015 * (logP - trend);
        LOGP[i] = logP;
      }
      day.close[i] = Math.max(0.5, Math.round(Math.exp(logP) * 100) / 100);

      const season = h.seasonal[i] ? holidaySeason : 1;
      const v = h.visitsBase[i]! * growth * weekday * season * Math.exp(0.015 * (msOut - 50) + 0.08 * visitsRng.normal()) * (1 + spike);
      day.visits[i] = Math.max(1, Math.round(v));
    }

    this.dayIndex.set(date, t);
    this.days.push(day);
    this.restate(day);
    this.maybeSignal(day, t);
  }

  private restate(day: SimDay): void {
    const rng = this.rng.restate;
    const picked: number[] = [];
    for (let i = 0; i < this.tickers.length; i++) if (rng.next() < RESTATE_PROBABILITY) picked.push(i);
    if (picked.length === 0) return;
    const publishedMs = Date.parse(day.date + PUBLISH_TIME.scores);
    const instants = Array.from({ length: Math.min(picked.length, rng.int(1, 3)) }, () =>
      new Date(publishedMs + rng.int(86_400, 432_000) * 1000).toISOString(),
    );
    const byInstant = new Map<string, ScoreValues[]>();
    for (const i of picked) {
      const at = rng.pick(instants);
      const ms = nudge(day.ms[i]!, rng, 0.5, 4);
      const ws = rng.next() < 0.5 ? nudge(day.ws[i]!, rng, 0.3, 3) : day.ws[i]!;
      const rows = byInstant.get(at) ?? [];
      rows.push(this.row(i, day.date, ms, ws));
      byInstant.set(at, rows);
    }
    let revision = 0; // the publication is revision 0 of scores-<date>
    for (const at of [...byInstant.keys()].sort()) {
      revision += 1;
      const batch: RestateBatch = { date: day.date, at, revision, rows: byInstant.get(at)! };
      const on = at.slice(0, 10);
      const list = this.restatementsOn.get(on) ?? [];
      list.push(batch);
      this.restatementsOn.set(on, list);
    }
  }

  // --- signals ---------------------------------------------------------------------------------

  private maybeSignal(day: SimDay, t: number): void {
    const rng = this.rng.signals;
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
    type: string,
    day: SimDay,
    t: number,
    rng: Rng,
  ): { type: string; content: string; tickers: string[]; themes: string[] } | null {
    const sym = (i: number) => this.tickers[i]!.symbol;
    const gapOf = (d: SimDay, i: number) => round1(d.ms[i]! - d.ws[i]!);
    const back = (k: number) => this.days[Math.max(0, t - k)]!;
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
          const next = this.nextReport(j, tomorrow);
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

/** Convenience: a fresh dataset's appends in (fromExclusive, toInclusive]. Prefer a long-lived `DemoDataset`. */
export function demoAppendsBetween(fromExclusive: Date | null, toInclusive: Date, options?: DemoOptions): DemoAppend[] {
  return new DemoDataset(options).appendsBetween(fromExclusive, toInclusive);
}

// ---------------------------------------------------------------------------------------------

const MARKET_VOL = 0.009;

function volatility(total: number, beta: number): { beta: number; idio: number } {
  return { beta, idio: Math.sqrt(Math.max(1e-6, total * total - (beta * MARKET_VOL) ** 2)) };
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** A jump of `size` in direction `sign`, turned around if it would leave 8..92. */
function reflectJump(x: number, size: number, sign: number): number {
  const y = x + sign * size;
  return y < 8 || y > 92 ? clamp(x - sign * size, 8, 92) : y;
}

function nudge(x: number, rng: Rng, min: number, max: number): number {
  const sign = rng.next() < 0.5 ? -1 : 1;
  let y = round1(clamp(x + sign * rng.uniform(min, max), 0, 100));
  if (y === x) y = round1(clamp(x - sign * min, 0, 100));
  return y;
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
