import type { ReadStore } from '../../src/core/read-store.port.js';
import type { ThemeRelationship } from '../../src/domain/scores/reference.events.js';
import { notFound } from '../../src/core/errors.js';
import { latestScores, type LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { themes as themesCollection, type ThemeDoc } from '../../projections/reference/reference.projection.js';
import { byServiceScoreDesc, compareText, mean1, visibleCrossSection } from '../shared/cross-section.js';
import { scoreOnOrBefore } from '../shared/score-as-of.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';

/** The aggregate fields a theme shows in the list and in its detail. */
/**
 * A theme slug as a client may write it, in any case (the lookup lower-cases it): the OpenAPI
 * document declares this as the `slug` parameter's pattern.
 */
export const THEME_SLUG = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

export interface ThemeAggregates {
  /**
   * Constituents in your universe (free keys: `top100` only).
   * @isInt
   */
  stock_count: number;
  /**
   * Of those, how many have a score on or before your as-of date (the ones the averages cover).
   * Each constituent counts with its latest score on or before as_of, as GET /v1/scores/{ticker}
   * shows it: a late, halted or delisted stock counts with its last score.
   * @isInt
   */
  scored_count: number;
  /** Mean main_street of the scored constituents, 1 decimal; null when none is scored. */
  avg_main_street: number | null;
  /** Mean wall_street of the scored constituents, 1 decimal; null when none is scored. */
  avg_wall_street: number | null;
  /** Mean service_score of the scored constituents, 1 decimal; null when none is scored. */
  avg_service_score: number | null;
}

export interface ThemeListItem extends ThemeAggregates {
  /** Identifier for GET /v1/themes/{slug}. */
  slug: string;
  /** Display name. */
  name: string;
  /** What the theme covers. */
  description: string;
  /** 0-100: how strongly the theme drives its constituents. */
  strength: number;
  /** Constituent symbols in your universe, in the theme's own order. */
  tickers: string[];
}

export interface ThemeConstituent {
  /** Stock symbol. */
  ticker: string;
  /** How the stock relates to the theme. */
  relationship: ThemeRelationship;
  /**
   * Date of the stock's latest score on or before your as-of date (the as-of date itself unless
   * the stock is late, halted or delisted); null when it has no score on or before it.
   * @format date
   */
  date: string | null;
  /** Measured consumer demand, 0-100; null when unscored. */
  main_street: number | null;
  /** Analyst sentiment, 0-100; null when unscored. */
  wall_street: number | null;
  /** Composite, 0-100; null when unscored. */
  service_score: number | null;
  /** main_street − wall_street; null when unscored. */
  divergence_gap: number | null;
}

export interface ThemeDetail extends ThemeAggregates {
  /** Theme identifier. */
  slug: string;
  /** Display name. */
  name: string;
  /** 0-100: how strongly the theme drives its constituents. */
  strength: number;
  /** The constituents in your universe, by service_score descending (ties by ticker; unscored last). */
  constituents: ThemeConstituent[];
}

/** The score fields a constituent shows. */
type MemberScore = Pick<LatestScore, 'ticker' | 'date' | 'main_street' | 'wall_street' | 'service_score' | 'divergence_gap'>;

interface Member {
  ticker: string;
  relationship: ThemeRelationship;
  score: MemberScore | undefined;
}

/** The constituents of a theme the caller may see: each ticker once, in the theme's order. */
function visibleConstituents(theme: ThemeDoc, v: Visibility): ThemeDoc['constituents'] {
  const seen = new Set<string>();
  return theme.constituents.filter((c) => {
    if (seen.has(c.ticker) || !inUniverse(v, c.ticker)) return false;
    seen.add(c.ticker);
    return true;
  });
}

function membersOf(theme: ThemeDoc, v: Visibility, scores: ReadonlyMap<string, MemberScore>): Member[] {
  return visibleConstituents(theme, v).map((c) => ({ ticker: c.ticker, relationship: c.relationship, score: scores.get(c.ticker) }));
}

/**
 * Each ticker's latest score on or before the caller's as-of date (never a later one): ticker →
 * row; a ticker with none is left out. The tickers must be in the caller's universe.
 *
 * The as-of cross-section (one document) answers every ticker scored on as_of, which is its
 * latest row on or before it. The others (late, halted, delisted, or never scored) are looked up
 * as GET /v1/scores/{ticker} does it (scoreOnOrBefore), so both endpoints always show the same row.
 */
async function latestScoresAsOf(reads: ReadStore, v: Visibility, tickers: Iterable<string>): Promise<Map<string, MemberScore>> {
  const out = new Map<string, MemberScore>();
  if (v.asOf === null) return out;
  const day = await visibleCrossSection(reads, v);
  const behind: string[] = [];
  for (const t of new Set(tickers)) {
    const row = day.get(t);
    if (row) out.set(t, row);
    else behind.push(t);
  }
  const asOf = v.asOf;
  const found = await Promise.all(
    behind.map(async (t) => {
      // No score on or before as_of (or none at all): the constituent is unscored.
      const latest = await reads.get(latestScores, t);
      return latest ? scoreOnOrBefore(reads, latest, asOf) : null;
    }),
  );
  for (const row of found) if (row) out.set(row.ticker, row);
  return out;
}

function aggregates(members: readonly Member[]): ThemeAggregates {
  const scored = members.flatMap((m) => (m.score ? [m.score] : []));
  return {
    stock_count: members.length,
    scored_count: scored.length,
    avg_main_street: mean1(scored.map((s) => s.main_street)),
    avg_wall_street: mean1(scored.map((s) => s.wall_street)),
    avg_service_score: mean1(scored.map((s) => s.service_score)),
  };
}

/**
 * Every theme, strongest first (ties by slug), with aggregates over each constituent's latest
 * score on or before the caller's as-of date (so delayed on the free tier). A free key's view of a
 * theme leaves out the constituents outside `top100`: they are neither listed in `tickers` nor counted.
 */
export async function listThemes(reads: ReadStore, v: Visibility): Promise<ThemeListItem[]> {
  const all = await reads.find(themesCollection, {});
  const scores = await latestScoresAsOf(reads, v, all.items.flatMap((t) => visibleConstituents(t, v).map((c) => c.ticker)));
  return all.items
    .sort((a, b) => b.strength - a.strength || compareText(a.slug, b.slug))
    .map((t) => {
      const members = membersOf(t, v, scores);
      return {
        slug: t.slug,
        name: t.name,
        description: t.description,
        strength: t.strength,
        tickers: members.map((m) => m.ticker),
        ...aggregates(members),
      };
    });
}

/**
 * One theme with each visible constituent's latest score on or before the caller's as-of date;
 * 404 for an unknown slug.
 */
export async function getThemeDetail(reads: ReadStore, v: Visibility, slug: string): Promise<ThemeDetail> {
  const theme = await reads.get(themesCollection, slug);
  if (!theme) throw notFound(`no theme ${slug}; GET /v1/themes lists them`);
  const scores = await latestScoresAsOf(reads, v, visibleConstituents(theme, v).map((c) => c.ticker));
  const members = membersOf(theme, v, scores);
  const ranked = [...members].sort((a, b) => {
    if (a.score && b.score) return byServiceScoreDesc(a.score, b.score);
    if (a.score || b.score) return a.score ? -1 : 1; // unscored last
    return compareText(a.ticker, b.ticker);
  });
  const constituents: ThemeConstituent[] = ranked.map(({ ticker, relationship, score }) => ({
    ticker,
    relationship,
    date: score?.date ?? null,
    main_street: score?.main_street ?? null,
    wall_street: score?.wall_street ?? null,
    service_score: score?.service_score ?? null,
    divergence_gap: score?.divergence_gap ?? null,
  }));
  return { slug: theme.slug, name: theme.name, strength: theme.strength, ...aggregates(members), constituents };
}

export interface ThemesResponse {
  /** Every theme, strongest first. */
  themes: ThemeListItem[];
  /**
   * Number of themes.
   * @isInt
   */
  count: number;
  /**
   * Your as-of date: the averages use each constituent's latest score on or before it. On the free
   * tier it trails today by 7 days.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall): Promise<ThemesResponse> {
  const v = await call.visibility();
  const themes = await listThemes(call.ctx.reads, v);
  await call.charge('themes');
  return { themes, count: themes.length, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
