import type { ReadStore } from '../../src/core/read-store.port.js';
import { BULK_EXPORTS_NOTE, EXPORT_NAMES, minuteStamp } from '../../src/domain/exports/export-bundle.js';
import { latestBundle } from '../../projections/exports/exports.projection.js';
import type { MeteredCall } from '../shared/query-context.js';

export interface BulkExport {
  /** The bundle the file belongs to: the first segment of its download path after `/v1/bulk/exports/`. */
  bundle_id: string;
  /** The file's name. */
  name: string;
  /**
   * Where to download it, with the same X-API-Key (Range, ETag and If-None-Match supported).
   * @format uri
   */
  url: string;
  /**
   * Data rows (the header row not counted).
   * @isInt
   */
  row_count: number;
  /** SHA-256 of the gzipped file, hex; also the download's ETag. */
  sha256: string;
  /**
   * When the file was written, `YYYY-MM-DD HH:MM` (UTC).
   * @format timestamp-minutes
   */
  generated_at: string;
}

export interface BulkExportsResponse {
  /** The latest bundle's files; empty until the first run has completed. */
  exports: BulkExport[];
  /** What the bundle is and how to use it. */
  note: string;
}

/** The path of a bundle's file (the listing's `url` is the base URL and this). */
export const downloadPath = (runId: string, name: string) => `/v1/bulk/exports/${runId}/${name}`;

export async function listBulkExports(reads: ReadStore, baseUrl: string): Promise<BulkExportsResponse> {
  const bundle = await latestBundle(reads);
  const exports: BulkExport[] = [];
  for (const name of EXPORT_NAMES) {
    const file = bundle?.files.find((f) => f.name === name);
    if (!bundle || !file) continue;
    exports.push({
      bundle_id: bundle.run_id,
      name,
      url: `${baseUrl}${downloadPath(bundle.run_id, name)}`,
      row_count: file.row_count,
      sha256: file.sha256,
      generated_at: minuteStamp(file.generated_at),
    });
  }
  return { exports, note: BULK_EXPORTS_NOTE };
}

export async function run(call: MeteredCall): Promise<BulkExportsResponse> {
  const out = await listBulkExports(call.ctx.reads, call.ctx.baseUrl());
  await call.charge('bulk_exports');
  return out;
}
