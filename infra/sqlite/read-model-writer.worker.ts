/**
 * The read models' writer thread: owns the read-model write connection, so that SQLite's share of
 * a commit (inserts, index updates, the WAL) runs beside the projections of the next batch.
 * Messages, in order: {define}, and {id, commit}, answered {id} once written. A commit that fails
 * is answered {id, failure} and retried, after a pause doubling up to a minute, until it is
 * written: the store has already resolved the commit to its caller, so it must not be lost.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { readModelWriter, type SerializedCommit, type TableSpec } from './read-model-writes.js';

/** How long a commit waits for a write lock held by another connection before it fails (and is retried). */
const LOCK_WAIT_MS = 60_000;
const MAX_RETRY_PAUSE_MS = 60_000;

const { file, synchronous } = workerData as { file: string; synchronous: 'FULL' | 'NORMAL' };
const db = openSqlite(file, { synchronous });
// The log's writer thread commits to the same file: a commit waits for its lock here, in SQLite's
// busy handler (sleeping this thread, not the event loop), as long as a steady stream of appends
// may keep it.
db.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
const writer = readModelWriter(db);
const sleeper = new Int32Array(new SharedArrayBuffer(4));

parentPort!.on('message', (msg: { define: TableSpec } | { id: number; commit: SerializedCommit }) => {
  if ('define' in msg) {
    writer.define(msg.define);
    return;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      writer.commit(msg.commit);
      break;
    } catch (err) {
      parentPort!.postMessage({ id: msg.id, failure: { name: (err as Error).name, message: (err as Error).message } });
      Atomics.wait(sleeper, 0, 0, Math.min(1000 * 2 ** attempt, MAX_RETRY_PAUSE_MS));
    }
  }
  parentPort!.postMessage({ id: msg.id });
});
