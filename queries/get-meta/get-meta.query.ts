import { eventTypesOf, type ReadModelMemo } from '../../src/core/read-model-memo.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { tradingDaysBetween } from '../../src/domain/trading-calendar.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { latestScores, latestScoresProjection } from '../../projections/latest-scores/latest-scores.projection.js';
import { referenceProjection, tickers } from '../../projections/reference/reference.projection.js';
import { dateAt, scoreHistory, scoreHistoryProjection, scoreVersions } from '../../projections/score-history/score-history.projection.js';
import { toTimestamp } from '../shared/cross-section.js';
import { TOP100_RANK } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { FIELD_DEFINITIONS, type FieldDefinition } from './field-definitions.js';

export interface HistoryDepth {
  /**
   * First date with scores; null before any.
   * @format date
   */
  first_date: string | null;
  /**
   * Latest published score date; null before any.
   * @format date
   */
  last_date: string | null;
  /**
   * Trading days with published scores.
   * @isInt
   */
  trading_days: number;
  /**
   * Score rows (one per stock per trading day from its first score to its latest).
   * @isInt
   */
  rows: number;
}

/** Point-in-time statistics: how much of the history was restated, how late, how often. */
export interface VintageStats {
  /**
   * Rows restated at least once.
   * @isInt
   */
  rows_restated: number;
  /** rows_restated / rows, a fraction 0-1 (4 decimals). */
  share_restated: number;
  /**
   * Superseded versions kept (one per restatement).
   * @isInt
   */
  restatements: number;
  /** Median time from a row's first publication to its first restatement, hours (1 decimal); null when none. */
  median_restatement_lag_hours: number | null;
  /** Longest such time, hours (1 decimal); null when none. */
  max_restatement_lag_hours: number | null;
  /**
   * Most versions any row has had (1 = never restated).
   * @isInt
   */
  max_versions_per_row: number;
  /**
   * Latest restatement, `YYYY-MM-DD HH:MM:SS` UTC; null when none.
   * @format timestamp
   */
  last_restated_at: string | null;
}

export interface DatasetStats {
  universe: number;
  depth: HistoryDepth;
  vintages: VintageStats;
}

const HOUR_MS = 3_600_000;
const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places;

/** What `datasetStats` reads is written by these projections' events only. */
const STATS_DEPEND_ON = eventTypesOf(referenceProjection, dailyScoresProjection, latestScoresProjection, scoreHistoryProjection);

/**
 * `datasetStats`, built once per position of the read models it reads: `GET /v1/meta` is free, and
 * the build costs a query per stock whose coverage began late and a scan of the score versions
 * (100-300 ms on the demo history), so a call costs the body's serialisation, not the build.
 */
export function cachedDatasetStats(reads: ReadStore, memo: ReadModelMemo): Promise<DatasetStats> {
  return memo.get('meta:dataset-stats', STATS_DEPEND_ON, () => datasetStats(reads));
}

/**
 * Dataset depth and vintage statistics from the read models: the first day's cross-section and
 * each stock's latest score give the depth, and the stored point-in-time versions give the
 * restatement statistics.
 *
 * `rows` counts, per stock, the trading days from its first score to its latest: the service
 * publishes every stock on every trading day once its coverage starts.
 */
export async function datasetStats(reads: ReadStore): Promise<DatasetStats> {
  const [universe, days, firstPage, latest] = await Promise.all([
    reads.count(tickers, {}),
    reads.count(dailyScores, {}),
    reads.find(dailyScores, {}, { sort: [['date', 1]], limit: 1 }),
    reads.find(latestScores, {}),
  ]);
  const firstDay = firstPage.items[0];
  const depth: HistoryDepth = { first_date: firstDay?.date ?? null, last_date: null, trading_days: days, rows: 0 };
  if (firstDay && latest.items.length > 0) {
    const lastDate = latest.items.reduce((m, r) => (r.date > m ? r.date : m), firstDay.date);
    depth.last_date = lastDate;
    const index = new Map(tradingDaysBetween(firstDay.date, lastDate).map((d, i) => [d, i]));
    const scoredFirst = new Set(firstDay.tickers);
    for (const row of latest.items) {
      const first = scoredFirst.has(row.ticker) ? firstDay.date : await firstScoreDate(reads, row.ticker);
      const from = first === null ? undefined : index.get(first);
      const to = index.get(row.date);
      if (from !== undefined && to !== undefined && to >= from) depth.rows += to - from + 1;
    }
  }
  return { universe, depth, vintages: await vintageStats(reads, depth.rows) };
}

/** A stock whose coverage began after the first day: the first date of its oldest history bucket. */
async function firstScoreDate(reads: ReadStore, ticker: string): Promise<string | null> {
  const page = await reads.find(scoreHistory, { ticker }, { sort: [['month', 1]], limit: 1 });
  const bucket = page.items[0];
  return bucket && bucket.days.length > 0 ? dateAt(bucket, 0) : null;
}

async function vintageStats(reads: ReadStore, rows: number): Promise<VintageStats> {
  const versions = (await reads.find(scoreVersions, {})).items;
  const lags: number[] = [];
  let maxVersion = 0;
  let last = '';
  for (const v of versions) {
    // Version 1 is the first publication: its end is the row's first restatement.
    if (v.version === 1) lags.push((Date.parse(v.valid_to) - Date.parse(v.valid_from)) / HOUR_MS);
    if (v.version > maxVersion) maxVersion = v.version;
    if (v.valid_to > last) last = v.valid_to;
  }
  lags.sort((a, b) => a - b);
  const median = lags.length === 0 ? null : lags.length % 2 === 1 ? lags[(lags.length - 1) / 2]! : (lags[lags.length / 2 - 1]! + lags[lags.length / 2]!) / 2;
  return {
    rows_restated: lags.length,
    share_restated: rows === 0 ? 0 : round(lags.length / rows, 4),
    restatements: versions.length,
    median_restatement_lag_hours: median === null ? null : round(median, 1),
    max_restatement_lag_hours: lags.length === 0 ? null : round(lags[lags.length - 1]!, 1),
    // The current value is one version past the newest superseded one.
    max_versions_per_row: maxVersion + 1,
    last_restated_at: last ? toTimestamp(last) : null,
  };
}

/** The universe statement of the meta response. */
export function coverageStatement(universe: number): string {
  return `${universe} US-listed stocks, ranked by size. Paid plans and Pro members see all of them (coverage "all"); free keys see the ${TOP100_RANK} largest (coverage "top100"), 7 days delayed.`;
}

export const DATASET_STATEMENT =
  'Daily Main-Street (measured consumer demand) and Wall-Street (analyst sentiment) scores, 0-100, with a composite service_score and the divergence gap between them, for US-listed stocks; published every US trading day at 22:00 UTC, with theme baskets, research signals, earnings dates and divergence outcomes.';

export const RESTATEMENT_POLICY =
  'Scores are restated deliberately when an input is corrected, typically one to five days after first publication. A restatement overwrites the row and sets its restated_at; the value it replaced is kept as a point-in-time version with the interval in which it was current. To stay in sync, loop on GET /v1/scores/history with since=<the next_since of your previous answer> and upsert the rows it returns by ticker and date (each new or restated row comes once); to reproduce what was known at an instant, ask for the history as_known_at it. Rows marked estimated are model backfill from before a stock’s measured coverage began.';

/** Every field any endpoint returns, by name. */
export interface FieldDefinitions {
  [field: string]: FieldDefinition;
}

export interface MetaHistory {
  /** How far the score history reaches. */
  depth: HistoryDepth;
  /** Point-in-time vintage statistics of the restatements. */
  vintages: VintageStats;
  /** How and why rows are restated, and how to follow the corrections. */
  restatement_policy: string;
}

export interface MetaResponse {
  /** What the dataset is. */
  dataset: string;
  /** Universe statement, with the number of stocks. */
  coverage: string;
  /** Definition of every field any endpoint returns, by field name. */
  fields: FieldDefinitions;
  /** Depth, point-in-time vintage statistics and restatement policy of the score history. */
  history: MetaHistory;
  /**
   * Licence terms.
   * @format uri
   */
  license: string;
  /**
   * Documentation.
   * @format uri
   */
  docs: string;
  /**
   * MCP server endpoint (streamable HTTP; send the same X-API-Key).
   * @format uri
   */
  mcp: string;
}

export async function run(call: MeteredCall): Promise<MetaResponse> {
  const stats = await cachedDatasetStats(call.ctx.reads, call.ctx.memo);
  await call.charge('meta');
  const base = call.ctx.baseUrl();
  return {
    dataset: DATASET_STATEMENT,
    coverage: coverageStatement(stats.universe),
    fields: { ...FIELD_DEFINITIONS },
    history: { depth: stats.depth, vintages: stats.vintages, restatement_policy: RESTATEMENT_POLICY },
    license: `${base}/license`,
    docs: `${base}/docs`,
    mcp: `${base}/mcp/http`,
  };
}
