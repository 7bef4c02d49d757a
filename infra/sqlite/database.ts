import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { narrow, PRIVATE_DIR } from '../../src/core/private-files.js';
import { dirname } from 'node:path';

export type SqliteDb = Database.Database;

/** How long a statement waits for a lock another connection holds before failing with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (or creates) the embedded store file. WAL lets the CLI and the server share the file;
 * `synchronous = FULL` makes every commit durable (the WAL is fsynced) before it returns, so an
 * acknowledged append survives `kill -9` and power loss.
 */
export function openSqlite(
  file: string,
  options: {
    readonly?: boolean;
    /**
     * `NORMAL` for connections that write only derived data (read models): in WAL mode a crash
     * can lose the last commits but never corrupts, and the projector checkpoint is lost with
     * them, so the events are simply projected again. The event log always uses `FULL`.
     */
    synchronous?: 'FULL' | 'NORMAL';
  } = {},
): SqliteDb {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: PRIVATE_DIR });
  const db = new Database(file, { readonly: options.readonly ?? false });
  // Before the WAL is opened: SQLite gives its WAL and shared-memory files the database file's mode.
  if (file !== ':memory:' && !options.readonly) narrow(file);
  // 16 KiB pages: read-model documents are month buckets of a few KiB; smaller pages would
  // spill every one of them into overflow chains. Takes effect when the file is created.
  if (!options.readonly) db.pragma('page_size = 16384');
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -262144'); // 256 MiB page cache: read models are queried hot
  db.pragma('temp_store = MEMORY');
  db.pragma('wal_autocheckpoint = 10000');
  return db;
}
