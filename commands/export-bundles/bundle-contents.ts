/**
 * What each file of a bundle holds, row by row, read from one snapshot of the read models (the
 * columns are EXPORT_COLUMNS). Rows stream in the collections' id order: by ticker, then date
 * (divergence events: then flag date; versions: then version), one document in memory at a time.
 */
import type { CollectionDef, ReadSnapshot } from '../../src/core/read-store.port.js';
import type { ExportName } from '../../src/domain/exports/export-bundle.js';
import { divergenceEvents, divergenceProjection } from '../../projections/divergence/divergence.projection.js';
import { round1 } from '../../src/domain/composite.js';
import { scoreAt } from '../../projections/shared/columns.js';
import { dateAt, restatedAt, scoreHistory, scoreHistoryProjection, scoreVersions, type HistoryBucket, type ScoreVersion } from '../../projections/score-history/score-history.projection.js';
import { gapOf } from '../../projections/shared/score-row.js';

/**
 * Documents read per statement. A batch stays alive while its rows go out (a thousand history
 * buckets are some 20,000 rows), long enough for the collector to move it to the old generation,
 * which then grows until a full collection: a hundred keeps the run's peak memory low.
 */
const SCAN_BATCH = 100;

/** A CSV record: a value per column; null is an empty field. */
export type Cells = (string | number | boolean | null)[];

export interface BundleFile {
  name: ExportName;
  /** The collections read (for a progress bar: their document counts are the work to do). */
  collections: readonly CollectionDef<any>[];
  /** The projections writing them (their checkpoints say which log position the file reflects). */
  projectors: readonly string[];
  /** The records; `onDocument` is called for every document read. */
  rows(view: ReadSnapshot, onDocument: () => void): AsyncIterable<Cells>;
}

/**
 * The history row `i` of a bucket as cells, read from the columns directly (`rowAt` would build
 * an object per row first: two million rows of garbage per run).
 */
function historyCells(b: HistoryBucket, i: number, extra: 'history' | 'version'): Cells {
  const ms = scoreAt(b.main_street, i);
  const ws = scoreAt(b.wall_street, i);
  const written = restatedAt(b, i);
  const head: Cells = [b.ticker, dateAt(b, i)];
  if (extra === 'version') head.push(b.restated[b.days[i]!]?.[1] ?? 1);
  head.push(ms, ws, scoreAt(b.service_score, i), round1(ms - ws), b.estimated[i] === 1, written);
  if (extra === 'version') head.push(null);
  return head;
}

async function* historyRows(view: ReadSnapshot, onDocument: () => void): AsyncIterable<Cells> {
  for await (const b of view.scan(scoreHistory, SCAN_BATCH)) {
    onDocument();
    for (let i = 0; i < b.days.length; i++) yield historyCells(b, i, 'history');
  }
}

async function* divergenceRows(view: ReadSnapshot, onDocument: () => void): AsyncIterable<Cells> {
  for await (const e of view.scan(divergenceEvents, SCAN_BATCH)) {
    onDocument();
    yield [e.ticker, e.direction, e.flag_date, e.close_date, e.price_at_flag, e.price_at_close, e.pct_change, e.days, e.status];
  }
}

const versionCells = (v: ScoreVersion): Cells => [
  v.ticker,
  v.date,
  v.version,
  v.main_street,
  v.wall_street,
  v.service_score,
  gapOf(v),
  v.estimated,
  v.valid_from,
  v.valid_to,
];

/**
 * The superseded versions (score_versions) merged with the current ones (the history buckets):
 * both scans run in the same order of `ticker|date`, so each row's versions come out together,
 * oldest first, the current one last.
 */
async function* versionRows(view: ReadSnapshot, onDocument: () => void): AsyncIterable<Cells> {
  const superseded = view.scan(scoreVersions, SCAN_BATCH)[Symbol.asyncIterator]();
  let next = await superseded.next();
  for await (const b of view.scan<HistoryBucket>(scoreHistory, SCAN_BATCH)) {
    onDocument();
    for (let i = 0; i < b.days.length; i++) {
      // Ids of both collections begin with `ticker|date`: the row's older versions are the ones
      // not yet taken whose key is not after the row's.
      const key = `${b.ticker}|${dateAt(b, i)}`;
      while (!next.done && `${next.value.ticker}|${next.value.date}` <= key) {
        onDocument();
        yield versionCells(next.value);
        next = await superseded.next();
      }
      // The current version: valid from when it was written, with no end.
      yield historyCells(b, i, 'version');
    }
  }
  // Versions of rows no bucket holds (none, unless a read model is damaged) are not dropped.
  for (; !next.done; next = await superseded.next()) {
    onDocument();
    yield versionCells(next.value);
  }
}

export const BUNDLE_FILES: readonly BundleFile[] = [
  { name: 'scores_history.csv.gz', collections: [scoreHistory], projectors: [scoreHistoryProjection.name], rows: historyRows },
  { name: 'divergence_events.csv.gz', collections: [divergenceEvents], projectors: [divergenceProjection.name], rows: divergenceRows },
  { name: 'scores_versions.csv.gz', collections: [scoreHistory, scoreVersions], projectors: [scoreHistoryProjection.name], rows: versionRows },
];
