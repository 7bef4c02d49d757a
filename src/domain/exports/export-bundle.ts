/**
 * The Backtest Pack (docs/exports.md): which files a bundle holds, their columns, how many
 * bundles are kept, and the words the listing shows. The files' rows come from the read models
 * (commands/export-bundles/bundle-contents.ts); their columns are fixed here, once.
 */

export const EXPORT_NAMES = ['scores_history.csv.gz', 'divergence_events.csv.gz', 'scores_versions.csv.gz'] as const;
export type ExportName = (typeof EXPORT_NAMES)[number];

export const isExportName = (name: string): name is ExportName => (EXPORT_NAMES as readonly string[]).includes(name);

/** The header row of each file, in column order. Instants are ISO 8601 UTC to the millisecond. */
export const EXPORT_COLUMNS: Readonly<Record<ExportName, readonly string[]>> = {
  // Every current row: what GET /v1/scores/{ticker}/history answers, for every ticker and date.
  'scores_history.csv.gz': ['ticker', 'date', 'main_street', 'wall_street', 'service_score', 'divergence_gap', 'estimated', 'restated_at'],
  // Every divergence event, closed (with its outcome) and open (outcome columns empty).
  'divergence_events.csv.gz': ['ticker', 'direction', 'flag_date', 'close_date', 'price_at_flag', 'price_at_close', 'pct_change', 'days', 'status'],
  // Every value ever published, current from valid_from (inclusive) to valid_to (exclusive; empty
  // for the value current now): the rows with valid_from <= T < valid_to are what was known at T.
  'scores_versions.csv.gz': [
    'ticker',
    'date',
    'version',
    'main_street',
    'wall_street',
    'service_score',
    'divergence_gap',
    'estimated',
    'valid_from',
    'valid_to',
  ],
};

/** Whether a text can be a bundle (run) id: also a directory name, so nothing that could leave the exports directory. */
export const isBundleId = (id: string): boolean => /^[A-Za-z0-9_-]{1,100}$/.test(id);

const FILE_NAME = /^[a-z0-9_]+(\.[a-z0-9]+)+$/;

/** Refuses a run id or file name an export store would not make (every ExportFiles adapter checks both). */
export function checkExportPath(runId: string, name?: string): void {
  if (!isBundleId(runId)) throw new Error(`bad export run id ${JSON.stringify(runId)}`);
  if (name !== undefined && !FILE_NAME.test(name)) throw new Error(`bad export file name ${JSON.stringify(name)}`);
}

/** Completed bundles kept on disk (the newest is listed; older ones serve downloads already under way). */
export const BUNDLES_KEPT = 3;

/** The spec's `note` of GET /v1/bulk/exports. */
// One literal, not a concatenation: tsoa copies a constant into the OpenAPI example only then.
export const BULK_EXPORTS_NOTE =
  "The nightly Backtest Pack: the full score history, every divergence event and every published score version (valid_from / valid_to, for point-in-time backtests) as gzipped CSV with a header row. The latest bundle per file is listed; sha256 is over the gzipped bytes and is also the download's ETag. Downloads are free of credits and support Range.";

/** `YYYY-MM-DD HH:MM` (UTC) of an ISO instant: the spec's `generated_at` format. */
export function minuteStamp(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}
