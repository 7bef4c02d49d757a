import type { ReadStore } from '../../src/core/read-store.port.js';
import { notFound } from '../../src/core/errors.js';
import type { CrossSectionRow } from '../../projections/daily-scores/daily-scores.projection.js';
import { themes as themesCollection, type ThemeDoc } from '../../projections/reference/reference.projection.js';
import { byServiceScoreDesc, compareText, mean1, visibleCrossSection } from '../shared/cross-section.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';

/** The aggregate fields a theme shows in the list and in its detail. */
export interface ThemeAggregates {
  /** Constituents in your universe (free keys: `top100` only). */
  stock_count: number;
  /** Of those, how many have scores on your as-of date (the ones the averages cover). */
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
  /** How the stock relates to the theme: `core`, `supplier`, `beneficiary`, `adjacent`, `headwind`, … */
  relationship: string;
  /** Score date (your as-of date); null when the stock has no scores on it. */
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

interface Member {
  ticker: string;
  relationship: string;
  score: CrossSectionRow | undefined;
}

/** The constituents the caller may see (each ticker once), with their as-of scores. */
function membersOf(theme: ThemeDoc, v: Visibility, scores: ReadonlyMap<string, CrossSectionRow>): Member[] {
  const seen = new Set<string>();
  const out: Member[] = [];
  for (const c of theme.constituents) {
    if (seen.has(c.ticker) || !inUniverse(v, c.ticker)) continue;
    seen.add(c.ticker);
    out.push({ ticker: c.ticker, relationship: c.relationship, score: scores.get(c.ticker) });
  }
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
 * Every theme, strongest first (ties by slug), with aggregates over the constituents' scores of
 * the caller's as-of date (so delayed on the free tier). A free key's view of a theme leaves out
 * the constituents outside `top100`: they are neither listed in `tickers` nor counted.
 */
export async function listThemes(reads: ReadStore, v: Visibility): Promise<ThemeListItem[]> {
  const [all, scores] = await Promise.all([reads.find(themesCollection, {}), visibleCrossSection(reads, v)]);
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

/** One theme with its visible constituents' as-of scores; 404 for an unknown slug. */
export async function getThemeDetail(reads: ReadStore, v: Visibility, slug: string): Promise<ThemeDetail> {
  const theme = await reads.get(themesCollection, slug);
  if (!theme) throw notFound(`no theme ${slug}; GET /v1/themes lists them`);
  const members = membersOf(theme, v, await visibleCrossSection(reads, v));
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
