/**
 * Bulk export runs (the Backtest Pack, docs/exports.md). Every run is in the one stream
 * `exports`: started, each file written, completed (or abandoned by the next run when its
 * process died), and old bundles deleted. Downloads are recorded per account in
 * `export-downloads-<account_id>`: they cost no credits but an auditor can see who took what.
 */
import type { ExportName } from './export-bundle.js';

export const EXPORTS_STREAM = 'exports';
export const EXPORT_DOWNLOADS_PREFIX = 'export-downloads-';
export const exportDownloadsStream = (accountId: string) => `${EXPORT_DOWNLOADS_PREFIX}${accountId}`;

export type ExportTrigger = 'schedule' | 'cli';

/**
 * `positions`: the checkpoint of each projection the files are read from, as of the run's
 * snapshot: the bundle is exactly the read models at those log positions (`consistent`; false
 * where the read store cannot take a snapshot, see ReadSnapshot).
 */
export interface ExportStarted {
  type: 'ExportStarted';
  data: { run_id: string; trigger: ExportTrigger; started_at: string; positions: Record<string, string | null>; consistent: boolean };
}

/** A file is in place under its final name; `sha256` is over the gzipped bytes. */
export interface ExportFileWritten {
  type: 'ExportFileWritten';
  data: { run_id: string; name: ExportName; row_count: number; sha256: string; bytes: number; generated_at: string };
}

/** Every file of the run is written: the bundle is served from now on. */
export interface ExportCompleted {
  type: 'ExportCompleted';
  data: { run_id: string; completed_at: string };
}

/** A run that never completed (its process died); its files were removed. Recorded by the next run. */
export interface ExportAbandoned {
  type: 'ExportAbandoned';
  data: { run_id: string; at: string };
}

/** A completed bundle beyond the newest BUNDLES_KEPT: its files are removed. */
export interface ExportBundleDeleted {
  type: 'ExportBundleDeleted';
  data: { run_id: string; at: string };
}

export type ExportRunEvent = ExportStarted | ExportFileWritten | ExportCompleted | ExportAbandoned | ExportBundleDeleted;

/**
 * One download answered: who (account, key, request), which file of which bundle, what was asked
 * (`range`, null for the whole file) and how many bytes were sent before the response ended
 * (`complete`: all that was asked).
 */
export interface ExportDownloaded {
  type: 'ExportDownloaded';
  data: {
    account_id: string;
    key_id: string;
    request_id: string;
    run_id: string;
    name: ExportName;
    status: 200 | 206;
    range: string | null;
    bytes_sent: number;
    complete: boolean;
    at: string;
  };
}
