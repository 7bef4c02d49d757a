import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { narrow, PRIVATE_DIR } from '../../src/core/private-files.js';
import { dirname } from 'node:path';

/** A lock this process holds until `release()`, or until it dies. */
export interface ProcessLock {
  release(): void;
}

/**
 * Takes a lock on `path` (an otherwise empty SQLite file), shared or exclusive, or returns null
 * when another holder prevents it. The lock is the operating system's (fcntl, by SQLite): a
 * process killed with -9 releases it with its file descriptors, so no holder is ever judged
 * stale by its pid (pids are reused).
 *
 * A shared lock is a read transaction kept open; an exclusive one is `BEGIN EXCLUSIVE`. With the
 * rollback journal (`journal_mode=DELETE`, set here; WAL would let readers beside a writer) any
 * number of shared holders exclude an exclusive one and the reverse, across processes and between
 * connections of one process alike. `waitMs` retries that long (SQLite's busy timeout) before
 * giving up: an exclusive attempt that fails holds SQLite's pending lock for an instant, and a
 * shared taker should not mistake that instant for a holder.
 */
export function tryLock(path: string, mode: 'shared' | 'exclusive', waitMs = 0): ProcessLock | null {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
  const db = new Database(path);
  narrow(path);
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(waitMs))}`);
    db.pragma('journal_mode = DELETE');
    if (mode === 'exclusive') {
      db.exec('BEGIN EXCLUSIVE');
    } else {
      db.exec('BEGIN');
      // A deferred transaction takes its shared lock on the first read.
      db.prepare('SELECT count(*) FROM sqlite_master').get();
    }
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw err;
  }
  return {
    release() {
      if (!db.open) return;
      if (db.inTransaction) db.exec('ROLLBACK');
      db.close();
    },
  };
}
