/**
 * One export run (docs/exports.md): under the run lock, take one snapshot of the read models, and
 * stream each file of the bundle from it through CSV and gzip to disk, hashing the gzipped bytes
 * on the way. Every step is an event on the `exports` stream; the bundle is listed once
 * `ExportCompleted` is recorded. Memory stays flat: rows go one document at a time, with the
 * streams' backpressure, and nothing is collected.
 */
import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { stringify } from 'csv-stringify/sync';
import type { Clock } from '../../src/core/clock.js';
import { handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ExportFiles } from '../../src/core/export-files.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { ReadSnapshot, ReadStore } from '../../src/core/read-store.port.js';
import { EXPORT_COLUMNS, type ExportName } from '../../src/domain/exports/export-bundle.js';
import { EXPORTS_STREAM, type ExportFileWritten, type ExportTrigger } from '../../src/domain/exports/export.events.js';
import { BUNDLE_FILES, type BundleFile, type Cells } from './bundle-contents.js';
import { completedSince, keptBundles } from '../../src/domain/exports/export-run.state.js';
import { exportRunDecider } from '../../src/domain/exports/export-run.decider.js';

export interface ExportDeps {
  events: EventStore;
  reads: ReadStore;
  files: ExportFiles;
  clock: Clock;
  ids: Ids;
}

export interface ExportProgress {
  name: ExportName;
  /** Documents read of this file's collections so far, and (at the start) how many there are. */
  done: number;
  total: number;
}

export type ExportRunResult =
  | { status: 'completed'; run_id: string; files: ExportFileWritten['data'][]; deleted: string[]; seconds: number }
  /** Another run holds the lock: nothing was done. */
  | { status: 'busy' }
  /** A bundle completed at or after `unlessCompletedSince` (another replica's nightly run): nothing was done. */
  | { status: 'skipped'; run_id: string };

/** A run id that sorts by start time: `exp_20261124T2230Z_3fa9c1`. */
function newRunId(clock: Clock, ids: Ids): string {
  const iso = clock.now().toISOString();
  return ids.nextHex(`exp_${iso.slice(0, 10).replaceAll('-', '')}T${iso.slice(11, 16).replace(':', '')}Z_`, 6);
}

export interface ExportOptions {
  trigger: ExportTrigger;
  onProgress?: (p: ExportProgress) => void;
  /** Stops the run between two chunks (a shutdown): it stays unfinished, and the next run abandons it. */
  signal?: AbortSignal;
  /**
   * Runs only when no bundle completed that started at or after this instant (ISO), decided on
   * the `exports` stream under the lock: the nightly run of one scheduled time, once, however
   * many replicas try it and however far their read models lag.
   */
  unlessCompletedSince?: string;
}

export async function runExport(
  deps: ExportDeps,
  options: ExportOptions = { trigger: 'cli' },
): Promise<ExportRunResult> {
  options.signal?.throwIfAborted();
  const lock = await deps.files.lock();
  if (!lock) return { status: 'busy' };
  try {
    const view = await deps.reads.snapshot();
    try {
      return await runLocked(deps, view, options);
    } finally {
      await view.close();
    }
  } finally {
    await lock.release();
  }
}

async function runLocked(deps: ExportDeps, view: ReadSnapshot, options: ExportOptions): Promise<ExportRunResult> {
  const t0 = performance.now();
  const runId = newRunId(deps.clock, deps.ids);
  const positions: Record<string, string | null> = {};
  for (const file of BUNDLE_FILES) for (const p of file.projectors) positions[p] ??= await view.checkpoint(p);
  const data = { run_id: runId, trigger: options.trigger, started_at: deps.clock.now().toISOString(), positions, consistent: view.consistent };
  const started = await handleCommand(deps.events, exportRunDecider, EXPORTS_STREAM, { type: 'StartRun', data, unless_completed_since: options.unlessCompletedSince }, deps.clock);
  if (started.events.length === 0) return { status: 'skipped', run_id: completedSince(started.state, options.unlessCompletedSince!)! };
  // What a run that died left behind (and bundles a crash kept from being deleted) go first.
  const keep = new Set(keptBundles(started.state));
  for (const id of await deps.files.runs()) if (!keep.has(id)) await deps.files.remove(id);

  const files: ExportFileWritten['data'][] = [];
  for (const file of BUNDLE_FILES) {
    const written = await writeFile(deps, view, runId, file, options);
    await handleCommand(deps.events, exportRunDecider, EXPORTS_STREAM, { type: 'RecordFile', data: written }, deps.clock);
    files.push(written);
  }
  const completed = await handleCommand(deps.events, exportRunDecider, EXPORTS_STREAM, { type: 'CompleteRun', run_id: runId }, deps.clock);
  const deleted = completed.events.flatMap((e) => (e.type === 'ExportBundleDeleted' ? [e.data.run_id] : []));
  for (const id of deleted) await deps.files.remove(id);
  return { status: 'completed', run_id: runId, files, deleted, seconds: (performance.now() - t0) / 1000 };
}

/** Streams one file: records → CSV → gzip → (sha256, byte count) → a temporary file, renamed when complete. */
async function writeFile(
  deps: ExportDeps,
  view: ReadSnapshot,
  runId: string,
  file: BundleFile,
  { onProgress, signal }: { onProgress?: (p: ExportProgress) => void; signal?: AbortSignal },
): Promise<ExportFileWritten['data']> {
  let total = 0;
  if (onProgress) for (const def of file.collections) total += await deps.reads.count(def, {});
  let done = 0;
  let rows = 0;
  const report = () => onProgress?.({ name: file.name, done, total });
  report();
  const onDocument = () => {
    if (++done % 500 === 0) report();
  };
  const csv = Readable.from(csvChunks(file.rows(view, onDocument), EXPORT_COLUMNS[file.name], (n) => (rows += n)));
  const digest = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      digest.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  const sink = await deps.files.create(runId, file.name);
  try {
    await pipeline(
      csv,
      createGzip(),
      tap,
      sink.stream,
      { signal },
    );
    await sink.commit();
  } catch (err) {
    await sink.abort();
    throw err;
  }
  report();
  return { run_id: runId, name: file.name, row_count: rows, sha256: digest.digest('hex'), bytes, generated_at: deps.clock.now().toISOString() };
}

/**
 * Records per CSV chunk. Each chunk is one write into gzip and on to the file: a write per record
 * (csv-stringify's stream) made the demo's export three times slower than its rows' reading,
 * CSV and gzip together, in hops between streams.
 */
const CHUNK_RECORDS = 1024;

/** The header row, then the records as RFC 4180 CSV (csv-stringify), a few thousand records a chunk. */
async function* csvChunks(records: AsyncIterable<Cells>, columns: readonly string[], counted: (n: number) => void): AsyncIterable<string> {
  const options = { cast: { boolean: (b: boolean) => (b ? 'true' : 'false') } };
  yield stringify([columns], options);
  let batch: Cells[] = [];
  for await (const cells of records) {
    batch.push(cells);
    if (batch.length === CHUNK_RECORDS) {
      counted(batch.length);
      yield stringify(batch, options);
      batch = [];
    }
  }
  counted(batch.length);
  if (batch.length) yield stringify(batch, options);
}
