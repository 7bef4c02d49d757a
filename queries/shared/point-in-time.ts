import type { ReadStore } from '../../src/core/read-store.port.js';
import { scoreVersions, type HistoryRow, type ScoreVersion } from '../../projections/score-history/score-history.projection.js';
import { gapOf } from '../../projections/shared/score-row.js';

const GET_MANY_CHUNK = 1_000;

/**
 * The rows as they were published at the instant `at` (ISO, `toISOString()` form): a row first
 * published after `at` is dropped; a row restated after `at` gets back the value that was current
 * at `at` (the superseded version with valid_from ≤ at < valid_to), with `restated_at` = that
 * version's `valid_from` and `seq` its write sequence. Rows are kept in their order.
 *
 * The versions are read by key (ticker, date, version 1 … current − 1): a handful of exact
 * look-ups per restated row, whatever the size of the version table.
 */
export async function rowsAsKnownAt(reads: ReadStore, rows: readonly HistoryRow[], at: string): Promise<HistoryRow[]> {
  const keys: string[] = [];
  for (const r of rows) {
    if (r.published_at > at || r.restated_at <= at) continue;
    for (let version = 1; version < r.version; version++) {
      keys.push(scoreVersions.key({ ticker: r.ticker, date: r.date, version } as ScoreVersion));
    }
  }
  const valid = new Map<string, ScoreVersion>();
  for (let i = 0; i < keys.length; i += GET_MANY_CHUNK) {
    const found = await reads.getMany(scoreVersions, keys.slice(i, i + GET_MANY_CHUNK));
    for (const v of found.values()) {
      if (v.valid_from <= at && at < v.valid_to) valid.set(`${v.ticker}|${v.date}`, v);
    }
  }
  const out: HistoryRow[] = [];
  for (const r of rows) {
    if (r.published_at > at) continue;
    if (r.restated_at <= at) {
      out.push(r);
      continue;
    }
    const v = valid.get(`${r.ticker}|${r.date}`);
    // Every restated row keeps all its superseded versions; without one, the row's past is unknown.
    if (!v) continue;
    // Object.assign, not a spread with more properties (why: withChanges in src/domain/ledger/ledger.state.ts).
    out.push(Object.assign({}, r, {
      main_street: v.main_street,
      wall_street: v.wall_street,
      service_score: v.service_score,
      estimated: v.estimated,
      divergence_gap: gapOf(v),
      restated_at: v.valid_from,
      version: v.version,
      seq: v.seq,
    }));
  }
  return out;
}
