import Database from 'better-sqlite3';
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { narrow, PRIVATE_DIR, PRIVATE_FILE } from '../../src/core/private-files.js';
import { open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ExportFileSink, ExportFiles, RunLock } from '../../src/core/export-files.port.js';
import { checkExportPath, isBundleId } from '../../src/domain/exports/export-bundle.js';

/**
 * Export bundles as files: `<root>/<run_id>/<name>`. A file is written as `.<name>.partial`,
 * fsynced, renamed, and the directory fsynced, so after a crash a name holds a whole file or
 * nothing.
 *
 * The run lock is an exclusive transaction on `<root>/run.lock` (a SQLite file): the lock is the
 * operating system's (fcntl), so a run killed with -9 releases it with its process. A lock file
 * naming a pid would have to be judged stale, and pids are reused.
 */
export class ExportDirectory implements ExportFiles {
  /** The locks this adapter holds, released by `close`. */
  private readonly held = new Set<RunLock>();

  constructor(private readonly root: string) {}

  private dir(runId: string): string {
    checkExportPath(runId);
    return join(this.root, runId);
  }

  private path(runId: string, name: string): string {
    checkExportPath(runId, name);
    return join(this.root, runId, name);
  }

  lock(): Promise<RunLock | null> {
    mkdirSync(this.root, { recursive: true, mode: PRIVATE_DIR });
    const db = new Database(join(this.root, 'run.lock'));
    narrow(join(this.root, 'run.lock'));
    try {
      db.pragma('busy_timeout = 0');
      db.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      db.close();
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return Promise.resolve(null);
      throw err;
    }
    const lock: RunLock = {
      release: () => {
        this.held.delete(lock);
        if (db.open) {
          db.exec('ROLLBACK');
          db.close();
        }
        return Promise.resolve();
      },
    };
    this.held.add(lock);
    return Promise.resolve(lock);
  }

  async create(runId: string, name: string): Promise<ExportFileSink> {
    const dir = this.dir(runId);
    const final = this.path(runId, name);
    const partial = join(dir, `.${name}.partial`);
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
    const stream = createWriteStream(partial, { mode: PRIVATE_FILE });
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
    return {
      stream,
      async commit() {
        await syncPath(partial, 'r+');
        await rename(partial, final);
        await syncPath(dir, 'r');
      },
      async abort() {
        stream.destroy();
        await rm(partial, { force: true });
      },
    };
  }

  async size(runId: string, name: string): Promise<number | null> {
    try {
      const s = await stat(this.path(runId, name));
      return s.isFile() ? s.size : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  read(runId: string, name: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.path(runId, name), range ? { start: range.start, end: range.end } : {});
  }

  async runs(): Promise<string[]> {
    let entries;
    try {
      entries = await readdir(this.root, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return entries.filter((e) => e.isDirectory() && isBundleId(e.name)).map((e) => e.name).sort();
  }

  async close(): Promise<void> {
    for (const lock of [...this.held]) await lock.release();
  }

  async remove(runId: string): Promise<void> {
    await rm(this.dir(runId), { recursive: true, force: true });
  }
}

/** fsync of a file or a directory (a rename is durable once its directory is synced). */
async function syncPath(path: string, flags: 'r' | 'r+'): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
