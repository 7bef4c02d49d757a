/**
 * ExportFiles port: where bulk export bundles are kept. Adapters: infra/files (a directory under
 * `$SCORES_DATA_DIR/exports`, the embedded default), infra/mongodb/export-files.ts (GridFS on the
 * read-store server) and infra/postgresql/export-files.ts (chunked rows), the shared ones served by
 * every replica (docs/scaling.md). A file is written under a temporary name and appears under its own
 * name only when it is complete and on disk, so a reader never sees half a file.
 */
import type { Readable, Writable } from 'node:stream';

export interface ExportFileSink {
  /** Where the file's bytes go. */
  readonly stream: Writable;
  /** After `stream` has finished: makes the file durable and gives it its name. */
  commit(): Promise<void>;
  /** Removes what was written (a failed run). */
  abort(): Promise<void>;
}

export interface RunLock {
  release(): Promise<void>;
}

export interface ExportFiles {
  /**
   * The right to run an export, exclusive across every process on the same store; null while
   * another process (or another run in this one) holds it. It is dropped when its holder dies:
   * by the operating system (directory), the database server when the holder's connection
   * closes (PostgreSQL), or once its lease runs out (GridFS).
   */
  lock(): Promise<RunLock | null>;
  create(runId: string, name: string): Promise<ExportFileSink>;
  /** The size of a complete file, or null when the bundle or file is not there. */
  size(runId: string, name: string): Promise<number | null>;
  /** A complete file's bytes, all or `start`..`end` (inclusive). */
  read(runId: string, name: string, range?: { start: number; end: number }): Readable;
  /** The runs that have anything on disk, complete or not. */
  runs(): Promise<string[]>;
  /** Removes a run's files, complete or not. */
  remove(runId: string): Promise<void>;
  /** Closes the adapter's own connections (a held lock goes with them). */
  close(): Promise<void>;
}
