import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { GridFsExportFiles } from '../../infra/mongodb/export-files.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { PostgresExportFiles } from '../../infra/postgresql/export-files.js';
import type { ExportFiles } from '../../src/core/export-files.port.js';
import { projectRoot } from '../../src/core/paths.js';
import { until } from '../support/processes.js';
import { exportFilesContract } from './export-files.contract.js';

const tag = () => randomUUID().replaceAll('-', '').slice(0, 10);

/** Another process that takes the run lock through an adapter and keeps it until it is killed; prints `locked` or `busy`. */
function lockHolder(adapterCode: string): { child: ChildProcess; said: () => string; exited: Promise<unknown> } {
  const code = [
    "import { GridFsExportFiles } from './infra/mongodb/export-files.js';",
    "import { PostgresExportFiles } from './infra/postgresql/export-files.js';",
    `const lock = await (${adapterCode}).lock();`,
    "console.log(lock ? 'locked' : 'busy');",
    'if (!lock) process.exit(0);',
    'setInterval(() => undefined, 60_000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: projectRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, said: () => out, exited };
}

/** The run lock against a holder in another process: refused while it lives, free once it is killed with -9. */
function killedHolderFreesTheLock(open: () => ExportFiles, adapterCode: () => string, freedWithin: number): void {
  it(`is refused while another process holds the run lock, and free once that process is killed with -9 (within ${freedWithin / 1000} s)`, async function () {
    this.timeout(60_000);
    const files = open();
    const other = lockHolder(adapterCode());
    try {
      await until(() => other.said().includes('locked') || other.child.exitCode !== null, 30_000);
      expect(other.said().trim()).to.equal('locked');
      expect(await files.lock()).to.equal(null);

      other.child.kill('SIGKILL');
      await other.exited;
      const t0 = Date.now();
      let lock = null;
      await until(async () => (lock = await files.lock()) !== null, freedWithin, 100);
      expect(lock, `free ${Date.now() - t0} ms after the kill`).not.to.equal(null);
    } finally {
      if (other.child.exitCode === null && other.child.signalCode === null) other.child.kill('SIGKILL');
      await files.close();
    }
  });
}

describe('Export files in GridFS (infra/mongodb, FerretDB or MongoDB)', function () {
  const uri = process.env['MONGODB_URI'];
  if (!uri) {
    it('runs when MONGODB_URI is set (npm run engines starts FerretDB)');
    return;
  }
  const dbs: string[] = [];
  after(async () => {
    for (const db of dbs) {
      const store = new MongoReadStore(uri, db);
      await store.dropDatabase();
      await store.close();
    }
  });
  const database = () => {
    const db = `scores_exports_${tag()}`;
    dbs.push(db);
    return db;
  };

  exportFilesContract('GridFS', () => {
    const db = database();
    const files = new GridFsExportFiles(uri, db);
    return Promise.resolve({ files, another: () => new GridFsExportFiles(uri, db), cleanup: () => files.close() });
  });

  describe('its run lock, a lease', () => {
    const db = database();
    killedHolderFreesTheLock(
      () => new GridFsExportFiles(uri, db, { leaseMs: 2_000 }),
      () => `new GridFsExportFiles(${JSON.stringify(uri)}, ${JSON.stringify(db)}, { leaseMs: 2000 })`,
      10_000,
    );

    it('is kept past its lease while its holder lives (renewed)', async function () {
      this.timeout(30_000);
      const holder = new GridFsExportFiles(uri, db, { leaseMs: 600 });
      const other = new GridFsExportFiles(uri, db, { leaseMs: 600 });
      try {
        const lock = await holder.lock();
        expect(lock).not.to.equal(null);
        await new Promise((r) => setTimeout(r, 2_000));
        expect(await other.lock()).to.equal(null);
        await lock!.release();
        expect(await other.lock()).not.to.equal(null);
      } finally {
        await holder.close();
        await other.close();
      }
    });
  });
});

describe('Export files in PostgreSQL (infra/postgresql, chunked rows)', function () {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  const schemas: string[] = [];
  after(async () => {
    const admin = await pgSession(url);
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  const schemaName = () => {
    const schema = `exports_${tag()}`;
    schemas.push(schema);
    return schema;
  };

  exportFilesContract('PostgreSQL', () => {
    const schema = schemaName();
    // Small chunks, so that the 700 kB file is many rows and ranges cross them.
    const open = () => new PostgresExportFiles(url, { schema, chunkBytes: 64 * 1024 });
    const files = open();
    return Promise.resolve({ files, another: open, cleanup: () => files.close() });
  });

  describe('its run lock, an advisory lock on a connection of its own', () => {
    const schema = schemaName();
    // The server drops the lock as soon as it sees the connection go: no lease to wait out.
    killedHolderFreesTheLock(
      () => new PostgresExportFiles(url, { schema }),
      () => `new PostgresExportFiles(${JSON.stringify(url)}, { schema: ${JSON.stringify(schema)} })`,
      5_000,
    );

    it('is not shared between two schemas (two deployments on one server)', async () => {
      const a = new PostgresExportFiles(url, { schema });
      const b = new PostgresExportFiles(url, { schema: schemaName() });
      try {
        expect(await a.lock()).not.to.equal(null);
        expect(await b.lock()).not.to.equal(null);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});
