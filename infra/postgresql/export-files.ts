import { randomUUID } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import type pg from 'pg';
import type { ExportFileSink, ExportFiles, RunLock } from '../../src/core/export-files.port.js';
import { checkExportPath } from '../../src/domain/exports/export-bundle.js';
import { checkSchemaName, openClient, openPool } from './database.js';

export interface PostgresExportFilesOptions {
  /** The schema of the files' tables (default `scores`); created when missing. */
  schema?: string;
  /** Bytes per stored chunk (default 256 KiB). */
  chunkBytes?: number;
}

// One implicit transaction; the lock keeps two processes from creating the tables at once.
const ddl = (s: string) => `
  SELECT pg_advisory_xact_lock(hashtext('scores.export-files.${s}'));
  CREATE SCHEMA IF NOT EXISTS ${s};
  CREATE TABLE IF NOT EXISTS ${s}.export_files (
    upload_id uuid PRIMARY KEY,
    run_id text NOT NULL,
    name text NOT NULL,
    complete boolean NOT NULL DEFAULT false,
    size bigint,
    chunk_bytes integer NOT NULL
  );
  CREATE UNIQUE INDEX IF NOT EXISTS export_files_complete ON ${s}.export_files (run_id, name) WHERE complete;
  CREATE TABLE IF NOT EXISTS ${s}.export_chunks (
    upload_id uuid NOT NULL REFERENCES ${s}.export_files ON DELETE CASCADE,
    n integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (upload_id, n)
  );`;

/**
 * Export bundles in PostgreSQL as chunked rows (`export_files`, `export_chunks`), so that every
 * replica serves every download. An upload is a row with `complete = false` until commit flips it
 * (and drops an earlier file of the name) in one transaction: a reader asks for complete files
 * only, so it never sees half a file. A range read fetches only the chunks it covers.
 *
 * The run lock is a session advisory lock held on a connection of its own: exclusive across every
 * process on the database, and dropped by the server when that connection closes, so a holder
 * killed with -9 frees it as soon as its socket is gone (no lease to expire, nothing judged stale).
 * Large objects would do for the bytes too, but need `lo_unlink` bookkeeping rows give for free.
 */
export class PostgresExportFiles implements ExportFiles {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly chunkBytes: number;
  private ready: Promise<void> | null = null;
  /** The locks this adapter holds, released by `close`. */
  private readonly held = new Set<RunLock>();

  constructor(
    private readonly url: string,
    options: PostgresExportFilesOptions = {},
  ) {
    this.schema = checkSchemaName(options.schema ?? 'scores');
    this.chunkBytes = options.chunkBytes ?? 256 * 1024;
    this.pool = openPool(url, { max: 4, applicationName: 'scores-exports' });
  }

  private setup(): Promise<void> {
    this.ready ??= this.pool.query(ddl(this.schema)).then(
      () => undefined,
      (err: unknown) => {
        this.ready = null;
        throw err;
      },
    );
    return this.ready;
  }

  async lock(): Promise<RunLock | null> {
    const client = await openClient(this.url, 'scores-export-lock');
    client.on('error', () => undefined);
    const key = `scores.export-run.${this.schema}`;
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [key]).catch(async (err: unknown) => {
      await client.end();
      throw err;
    });
    if (!rows[0]!.ok) {
      await client.end();
      return null;
    }
    const lock: RunLock = {
      release: async () => {
        if (!this.held.delete(lock)) return;
        // Ending the session drops its advisory locks.
        await client.end().catch(() => undefined);
      },
    };
    this.held.add(lock);
    return lock;
  }

  async create(runId: string, name: string): Promise<ExportFileSink> {
    checkExportPath(runId, name);
    await this.setup();
    const s = this.schema;
    const id = randomUUID();
    // A partial file a dead run left under the name goes first, as a new file truncates one on disk.
    await this.pool.query(`DELETE FROM ${s}.export_files WHERE run_id = $1 AND name = $2 AND NOT complete`, [runId, name]);
    await this.pool.query(`INSERT INTO ${s}.export_files (upload_id, run_id, name, chunk_bytes) VALUES ($1, $2, $3, $4)`, [id, runId, name, this.chunkBytes]);
    const stream = this.chunkWriter(id);
    return {
      stream,
      commit: () => this.commit(id, runId, name),
      abort: async () => {
        stream.destroy();
        await this.pool.query(`DELETE FROM ${s}.export_files WHERE upload_id = $1`, [id]);
      },
    };
  }

  /** A Writable that stores its bytes as rows of `chunkBytes` each (the last one shorter). */
  private chunkWriter(id: string): Writable {
    const insert = `INSERT INTO ${this.schema}.export_chunks (upload_id, n, data) VALUES ($1, $2, $3)`;
    let pending: Buffer[] = [];
    let held = 0;
    let n = 0;
    const flush = async (all: boolean) => {
      let buf = Buffer.concat(pending);
      while (buf.length >= this.chunkBytes || (all && buf.length > 0)) {
        await this.pool.query(insert, [id, n++, buf.subarray(0, this.chunkBytes)]);
        buf = buf.subarray(this.chunkBytes);
      }
      pending = [buf];
      held = buf.length;
    };
    return new Writable({
      write(chunk: Buffer, _enc, callback) {
        pending.push(chunk);
        held += chunk.length;
        if (held < 4 * 1024 * 1024) return callback();
        flush(false).then(() => callback(), callback);
      },
      final(callback) {
        flush(true).then(() => callback(), callback);
      },
    });
  }

  private async commit(id: string, runId: string, name: string): Promise<void> {
    const s = this.schema;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`DELETE FROM ${s}.export_files WHERE run_id = $1 AND name = $2 AND complete`, [runId, name]);
      await client.query(
        `UPDATE ${s}.export_files SET complete = true,
           size = (SELECT coalesce(sum(length(data)), 0) FROM ${s}.export_chunks WHERE upload_id = $1)
         WHERE upload_id = $1`,
        [id],
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async size(runId: string, name: string): Promise<number | null> {
    checkExportPath(runId, name);
    await this.setup();
    const rows = await this.completeFile(runId, name);
    return rows ? Number(rows.size) : null;
  }

  private async completeFile(runId: string, name: string): Promise<{ upload_id: string; size: string; chunk_bytes: number } | null> {
    const { rows } = await this.pool.query<{ upload_id: string; size: string; chunk_bytes: number }>(
      `SELECT upload_id, size, chunk_bytes FROM ${this.schema}.export_files WHERE run_id = $1 AND name = $2 AND complete`,
      [runId, name],
    );
    return rows[0] ?? null;
  }

  read(runId: string, name: string, range?: { start: number; end: number }): Readable {
    checkExportPath(runId, name);
    return Readable.from(this.bytes(runId, name, range));
  }

  /** The chunks a range covers, a few at a time, trimmed to the range. */
  private async *bytes(runId: string, name: string, range?: { start: number; end: number }): AsyncGenerator<Buffer> {
    await this.setup();
    const file = await this.completeFile(runId, name);
    if (!file) throw new Error(`no export file ${runId}/${name}`);
    const start = range?.start ?? 0;
    const end = Math.min(range?.end ?? Number(file.size) - 1, Number(file.size) - 1);
    const size = file.chunk_bytes;
    const last = Math.floor(end / size);
    for (let n = Math.floor(start / size); n <= last; n += 8) {
      const { rows } = await this.pool.query<{ n: number; data: Buffer }>(
        `SELECT n, data FROM ${this.schema}.export_chunks WHERE upload_id = $1 AND n BETWEEN $2 AND $3 ORDER BY n`,
        [file.upload_id, n, Math.min(n + 7, last)],
      );
      for (const row of rows) {
        const from = Math.max(start - row.n * size, 0);
        const to = Math.min(end - row.n * size + 1, row.data.length);
        yield row.data.subarray(from, to);
      }
    }
  }

  async runs(): Promise<string[]> {
    await this.setup();
    const { rows } = await this.pool.query<{ run_id: string }>(`SELECT DISTINCT run_id FROM ${this.schema}.export_files ORDER BY run_id`);
    return rows.map((r) => r.run_id).sort();
  }

  async remove(runId: string): Promise<void> {
    checkExportPath(runId);
    await this.setup();
    await this.pool.query(`DELETE FROM ${this.schema}.export_files WHERE run_id = $1`, [runId]);
  }

  async close(): Promise<void> {
    for (const lock of [...this.held]) await lock.release();
    await this.pool.end();
  }
}
