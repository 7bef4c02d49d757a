import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import { PLANS, type Tier } from '../../src/domain/plans.js';
import { scoreAt } from '../../projections/shared/columns.js';
import { crossSection, scoreDates } from '../../projections/daily-scores/daily-scores.projection.js';
import { dailyScores, tickerIndex } from '../../projections/shared/daily-scores.js';
import { divergenceDays, scoredCells, type DivergenceCell, type DivergenceDirection } from '../../projections/divergence/divergence.projection.js';
import { signals as signalsCollection, tickers, type SignalDoc } from '../../projections/reference/reference.projection.js';
import { badRequest } from '../../src/core/errors.js';
import { compareText } from '../shared/cross-section.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';
import { parseIntParam } from '../../src/web/int-param.js';

export const DIVERGENCE_LIMIT = { default: 25, min: 1, max: 100 } as const;
/** The lowest tier that receives `why_now` and `why_now_headline`. */
export const WHY_NOW_MIN_TIER: Tier = 'builder';
/** How far back `why_now` compares the gap (trading days). */
const LOOKBACK_DAYS = 20;
/** How many of the newest signals are searched for a ticker's latest research. */
const SIGNAL_SCAN = 1_000;

export interface DivergenceRow {
  /** Stock symbol. */
  ticker: string;
  /** Company name. */
  company: string;
  /** Measured consumer demand, 0-100. */
  main_street: number;
  /** Analyst sentiment, 0-100. */
  wall_street: number;
  /** main_street − wall_street; positive = bull, negative = bear. */
  gap: number;
  /** Fraction 0-1: rank of |gap| in the day's whole cross-section. */
  percentile: number;
  /**
   * Consecutive trading days at an extreme (percentile ≥ 0.95) in this direction; 0 when not at one.
   * @isInt
   */
  days_at_extreme: number;
  /** Researched context from the stock's own recent numbers and latest research signal (builder+). */
  why_now?: string;
  /** One-line headline of why_now (builder+). */
  why_now_headline?: string;
}

export function includesWhyNow(tier: Tier): boolean {
  return PLANS[tier].rank >= PLANS[WHY_NOW_MIN_TIER].rank;
}

/**
 * The values the document's enum lists (DIRECTION_VALUES), in any case, as the spec says: `bull` |
 * `bear` → the direction; absent or `null` → all. Anything else, the empty value too, → 400.
 */
export function parseDirection(value: string | undefined): DivergenceDirection | null {
  if (value === undefined || value.toLowerCase() === 'null') return null;
  const v = value.trim().toLowerCase();
  if (v === 'bull' || v === 'bear') return v;
  throw badRequest('direction must be bull, bear or null', { errors: [{ parameter: 'direction', message: 'must be bull, bear or null' }] });
}

/** The `direction` query values, as the OpenAPI document lists them: `null` is the spec's "null means all" spelled in a URL. */
export const DIRECTION_VALUES = ['bull', 'bear', 'null'] as const;

/**
 * The caller's as-of cross-section (its universe only), ranked by |gap| descending (ties by
 * ticker), optionally one direction only, cut at `limit`. Percentiles are ranks in the whole
 * universe, whatever the caller's coverage.
 */
export async function widestGaps(
  reads: ReadStore,
  v: Visibility,
  criteria: { direction: DivergenceDirection | null; limit: number; whyNow: boolean },
): Promise<DivergenceRow[]> {
  if (!v.asOf) return [];
  const [day, scores] = await Promise.all([reads.get(divergenceDays, v.asOf), reads.get(dailyScores, v.asOf)]);
  if (!day || !scores) return [];
  const cells = scoredCells(day, scores);
  const picked = Object.entries(cells)
    .filter(([t, c]) => inUniverse(v, t) && (criteria.direction === null || (criteria.direction === 'bull' ? c[0] > 0 : c[0] < 0)))
    .sort(([ta, a], [tb, b]) => Math.abs(b[0]) - Math.abs(a[0]) || compareText(ta, tb))
    .slice(0, criteria.limit);
  const names = await reads.getMany(
    tickers,
    picked.map(([t]) => t),
  );
  const index = tickerIndex(scores);
  const rows: DivergenceRow[] = picked.map(([t, c]) => {
    const i = index.get(t)!;
    return { ticker: t, company: names.get(t)?.company ?? t, main_street: scoreAt(scores.main_street, i), wall_street: scoreAt(scores.wall_street, i), gap: c[0], percentile: c[1], days_at_extreme: c[2] };
  });
  if (criteria.whyNow && rows.length) await addWhyNow(reads, v.asOf, rows, widthRanks(cells));
  return rows;
}

/** The gaps of the day `LOOKBACK_DAYS` trading days before `asOf` (null when history is shorter). */
async function lookback(reads: ReadStore, asOf: string): Promise<{ date: string; gaps: Map<string, number> } | null> {
  const page = await reads.find(scoreDates, { date: { $lt: asOf } }, { sort: [['date', -1]], limit: LOOKBACK_DAYS });
  const date = page.items[LOOKBACK_DAYS - 1]?.date;
  if (!date) return null;
  const day = await reads.get(dailyScores, date);
  return day ? { date, gaps: new Map(crossSection(day).map((r) => [r.ticker, r.divergence_gap])) } : null;
}

/** Each ticker's newest signal created on or before the end of `asOf`. */
async function latestSignalPerTicker(reads: ReadStore, asOf: string, wanted: ReadonlySet<string>): Promise<Map<string, SignalDoc>> {
  const out = new Map<string, SignalDoc>();
  let cursor: string | null = null;
  let seen = 0;
  do {
    const page: Page<SignalDoc> = await reads.find(
      signalsCollection,
      { created_at: { $lte: `${asOf}T23:59:59.999Z` } },
      { sort: [['created_at', -1], ['id', -1]], limit: 250, cursor },
    );
    for (const s of page.items) for (const t of s.tickers) if (wanted.has(t) && !out.has(t)) out.set(t, s);
    seen += page.items.length;
    cursor = page.nextCursor;
  } while (cursor && seen < SIGNAL_SCAN && out.size < wanted.size);
  return out;
}

const ordinal = (n: number) => {
  const tail = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${tail}`;
};
const signed = (x: number) => `${x > 0 ? '+' : ''}${x.toFixed(1)}`;

/**
 * why_now from the stock's own numbers: today's scores and gap, how extreme it is, how long it
 * has been, how the gap moved over the last 20 trading days, and the latest research signal on it.
 */
/** Each ticker's place by |gap| in the whole day (1 = widest; ties share the better place) and the day's size. */
function widthRanks(cells: Record<string, DivergenceCell>): { rank: Map<string, number>; n: number } {
  const entries = Object.entries(cells).sort(([, a], [, b]) => Math.abs(b[0]) - Math.abs(a[0]));
  const rank = new Map<string, number>();
  entries.forEach(([t, c], i) => rank.set(t, i > 0 && Math.abs(entries[i - 1]![1][0]) === Math.abs(c[0]) ? rank.get(entries[i - 1]![0])! : i + 1));
  return { rank, n: entries.length };
}

async function addWhyNow(reads: ReadStore, asOf: string, rows: DivergenceRow[], width: { rank: Map<string, number>; n: number }): Promise<void> {
  const [before, research] = await Promise.all([lookback(reads, asOf), latestSignalPerTicker(reads, asOf, new Set(rows.map((r) => r.ticker)))]);
  for (const r of rows) {
    const side = r.gap > 0 ? 'consumer demand running ahead of analysts' : 'analysts more upbeat than consumer demand';
    const top = Math.max(1, Math.round((1 - r.percentile) * 100));
    const parts = [
      `${r.ticker} has main_street ${r.main_street.toFixed(1)} against wall_street ${r.wall_street.toFixed(1)} on ${asOf}: a gap of ${signed(r.gap)}, ${side}, the ${ordinal(width.rank.get(r.ticker) ?? 0)} widest of ${width.n} stocks (percentile ${r.percentile.toFixed(4)}).`,
      r.days_at_extreme > 0
        ? `It has been at an extreme for ${r.days_at_extreme} trading day${r.days_at_extreme === 1 ? '' : 's'}${r.days_at_extreme === 1 ? ' (it starts today)' : ''}.`
        : 'It is not at an extreme (percentile below 0.95).',
    ];
    const old = before?.gaps.get(r.ticker);
    if (before && old !== undefined) {
      const change = Math.round((r.gap - old) * 10) / 10;
      parts.push(`${LOOKBACK_DAYS} trading days earlier (${before.date}) the gap was ${signed(old)}, so it has ${Math.abs(r.gap) >= Math.abs(old) ? 'widened' : 'narrowed'} by ${Math.abs(change).toFixed(1)} points.`);
    }
    const s = research.get(r.ticker);
    if (s) parts.push(`Latest research (${s.created_at.slice(0, 10)}, ${s.alert_type}): ${s.content}`);
    r.why_now = parts.join(' ');
    r.why_now_headline = `${r.ticker}: ${r.gap > 0 ? 'bull' : 'bear'} gap ${signed(r.gap)} (top ${top}%)${r.days_at_extreme > 0 ? `, ${r.days_at_extreme}d at extreme` : ''}`;
  }
}

export interface DivergenceResponse {
  /** Stocks ranked by |gap| descending (ties by ticker). */
  rows: DivergenceRow[];
  /**
   * Rows returned: the billed quantity.
   * @isInt
   */
  count: number;
  /** Whether your tier received why_now and why_now_headline (builder and higher). */
  why_now_included: boolean;
  /**
   * Data as-of date; on the free tier it trails today by 7 days. null before any scores exist.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, direction: string | undefined, limit: string | undefined): Promise<DivergenceResponse> {
  const dir = parseDirection(direction);
  const max = parseIntParam('limit', limit, DIVERGENCE_LIMIT);
  const whyNow = includesWhyNow(call.principal.tier);
  const v = await call.visibility();
  const rows = await widestGaps(call.ctx.reads, v, { direction: dir, limit: max, whyNow });
  await call.charge('divergence', rows.length);
  return { rows, count: rows.length, why_now_included: whyNow, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
