import { join } from 'node:path';
import { tryLock, type ProcessLock } from '../../infra/files/process-lock.js';

/**
 * Which processes use a data directory's store, as operating-system locks on two files under
 * `<dataDir>/run/`: every serving process holds a SHARED lock on `store.lock` for its lifetime
 * (several servers may serve one store), and `scores replay` holds an EXCLUSIVE lock on it, and on
 * `replay.lock`, while it rebuilds the read models.
 *
 * On the embedded store a replay drops every read model and its checkpoint and projects the log
 * again (on a shared read store it builds a new generation beside the live one instead:
 * src/app/replay-generations.ts, and takes no lock here). A server serving
 * meanwhile keeps projecting new events (every metered call is one) from where it was: its
 * commits move the checkpoints to the head before the replay gets there, the replay then takes
 * its batches for applied, and the read models stay empty behind up-to-date checkpoints (every
 * key answers 401, and a restart does not mend it). So the two exclude each other: a replay
 * refuses to start while a server runs on the directory, and a server refuses to start during a
 * replay. Other commands run beside a server (their projector commits are checked against the
 * stored checkpoints in the same transaction).
 *
 * The locks are released by the operating system when their process ends, however it ends
 * (`kill -9` too), so nothing is left to judge stale: no pid is kept, and a pid reused by an
 * unrelated process blocks nothing. (`run/server-<pid>` and `run/replay` files of earlier
 * versions are ignored.)
 */
export class StoreBusyError extends Error {}

const lockFile = (dataDir: string, name: 'store' | 'replay') => join(dataDir, 'run', `${name}.lock`);

/** Registers this process as a server of `dataDir`; refuses while a replay runs. Returns the release. */
export function registerServer(dataDir: string): () => void {
  // A replay's failed attempt holds SQLite's pending lock for an instant: wait that long.
  const lock = tryLock(lockFile(dataDir, 'store'), 'shared', 500);
  if (!lock) {
    throw new StoreBusyError(`a replay is rebuilding the read models of ${dataDir}; start the server once it has finished`);
  }
  return () => lock.release();
}

/** Takes the replay's place in `dataDir`; refuses while a server or another replay runs. Returns the release. */
export function beginReplay(dataDir: string): () => void {
  // First among replays, so that a second replay is told apart from a server.
  const replay = tryLock(lockFile(dataDir, 'replay'), 'exclusive');
  if (!replay) throw new StoreBusyError(`another replay is rebuilding the read models of ${dataDir}`);
  let store: ProcessLock | null;
  try {
    store = tryLock(lockFile(dataDir, 'store'), 'exclusive');
  } catch (err) {
    replay.release();
    throw err;
  }
  if (!store) {
    replay.release();
    throw new StoreBusyError(
      `a server is running on ${dataDir}: stop it, run the replay, then start it again ` +
        '(a replay beside a serving process would race its projections and leave the read models empty)',
    );
  }
  const held = store;
  return () => {
    held.release();
    replay.release();
  };
}
