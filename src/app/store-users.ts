import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which processes use a data directory's store, as files under `<dataDir>/run/`: one
 * `server-<pid>` per serving process, and `replay` while `scores replay` rebuilds the read models.
 *
 * A replay drops every read model and its checkpoint and projects the log again. A server serving
 * meanwhile keeps projecting new events (every metered call is one) from where it was: its
 * commits move the checkpoints to the head before the replay gets there, the replay then takes
 * its batches for applied, and the read models stay empty behind up-to-date checkpoints (every
 * key answers 401, and a restart does not mend it). So the two exclude each other: a replay
 * refuses to start while a server runs on the directory, and a server refuses to start during a
 * replay. Other commands run beside a server (their projector commits are checked against the
 * stored checkpoints in the same transaction). A process that died leaves its file behind; a file
 * whose process is gone is ignored and removed.
 */
export class StoreBusyError extends Error {}

const alive = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

function runDir(dataDir: string): string {
  const dir = join(dataDir, 'run');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The live process behind a run file, or null (a missing, unreadable or stale file is removed). */
function holder(file: string): number | null {
  let pid: number;
  try {
    pid = Number((JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }).pid);
  } catch {
    return null;
  }
  if (pid !== process.pid && alive(pid)) return pid;
  if (pid !== process.pid) rmSync(file, { force: true });
  return null;
}

const record = () => JSON.stringify({ pid: process.pid, since: new Date().toISOString() });

/** Registers this process as a server of `dataDir`; refuses while a replay runs. Returns the release. */
export function registerServer(dataDir: string): () => void {
  const dir = runDir(dataDir);
  const mine = join(dir, `server-${process.pid}`);
  // Written before the check, as `beginReplay` takes its file before checking: of a server and a
  // replay starting together, at least one sees the other.
  writeFileSync(mine, record());
  const replaying = holder(join(dir, 'replay'));
  if (replaying !== null) {
    rmSync(mine, { force: true });
    throw new StoreBusyError(
      `a replay (pid ${replaying}) is rebuilding the read models of ${dataDir}; start the server once it has finished`,
    );
  }
  return () => rmSync(mine, { force: true });
}

/** Takes the replay's place in `dataDir`; refuses while a server or another replay runs. Returns the release. */
export function beginReplay(dataDir: string): () => void {
  const dir = runDir(dataDir);
  const file = join(dir, 'replay');
  const other = holder(file);
  if (other !== null) throw new StoreBusyError(`another replay (pid ${other}) is rebuilding the read models of ${dataDir}`);
  try {
    writeFileSync(file, record(), { flag: 'wx' });
  } catch {
    throw new StoreBusyError(`another replay is starting on ${dataDir}`);
  }
  const servers = readdirSync(dir)
    .filter((f) => f.startsWith('server-'))
    .map((f) => holder(join(dir, f)))
    .filter((pid): pid is number => pid !== null);
  if (servers.length) {
    rmSync(file, { force: true });
    throw new StoreBusyError(
      `the server (pid ${servers.join(', ')}) is running on ${dataDir}: stop it, run the replay, then start it again ` +
        '(a replay beside a serving process would race its projections and leave the read models empty)',
    );
  }
  return () => rmSync(file, { force: true });
}
