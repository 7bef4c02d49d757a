import { expect } from 'chai';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runExport, type ExportRunResult } from '../../commands/export-bundles/export-run.handler.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { pgSession, withDatabase, type PgSession } from '../../infra/postgresql/database.js';
import { until } from '../support/processes.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

// A week of the demo: both services start in seconds even on a busy FerretDB.
const NOW = '2019-01-10T23:00:00Z';
const NAME = 'scores_history.csv.gz';

async function download(url: string, key: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(url, { headers: { 'X-API-Key': key, ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/**
 * Two services over the same engines (PostgreSQL log and export bundles, FerretDB read models),
 * each with a data directory of its own: a bundle one of them writes is downloaded from the other,
 * whole and by range, byte for byte and under the same ETag. Nothing goes through a local disk.
 */
describe('Export bundles any replica serves (PostgreSQL, FerretDB)', function () {
  this.timeout(300_000);
  const postgres = process.env['POSTGRES_URL'];
  const mongo = process.env['MONGODB_URI'];
  if (!postgres || !mongo) {
    it('runs when POSTGRES_URL and MONGODB_URI are set (npm run engines starts them)');
    return;
  }
  const database = `scores_shared_exports_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  let admin: PgSession;
  let writer: TestServer | undefined;
  let other: TestServer | undefined;

  before(async () => {
    admin = await pgSession(postgres);
    await admin.query(`CREATE DATABASE ${database}`);
    const env = { POSTGRES_URL: withDatabase(postgres, database), MONGODB_URI: mongo, MONGODB_DB: database };
    writer = await startTestServer({ now: NOW, env });
    other = await startTestServer({ now: NOW, env });
  });
  after(async () => {
    await other?.stop();
    await writer?.stop();
    const reads = new MongoReadStore(mongo, database);
    await reads.dropDatabase().catch(() => undefined);
    await reads.close();
    await admin?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin?.end();
  });

  it('serves a bundle written by one service from the other, with Range and ETag byte-identical', async () => {
    const s = writer!.services;
    const run = (await runExport({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids }, { trigger: 'cli' })) as Extract<ExportRunResult, { status: 'completed' }>;
    expect(run.status).to.equal('completed');
    // Nothing on either service's disk: the bundle is in the shared store.
    expect(existsSync(join(writer!.dir, 'exports', run.run_id))).to.equal(false);
    const key = demoKey(writer!.dir, 'quant');
    await until(async () => {
      const r = await getJson(`${other!.url}/v1/bulk/exports`, key);
      return ((r.body['exports'] as { url: string }[] | undefined) ?? []).some((f) => f.url.includes(`/${run.run_id}/`));
    }, 30_000, 100);

    const path = `/v1/bulk/exports/${run.run_id}/${NAME}`;
    const a = await download(`${writer!.url}${path}`, key);
    const b = await download(`${other!.url}${path}`, key);
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(b.bytes.equals(a.bytes)).to.equal(true);
    const sha = run.files.find((f) => f.name === NAME)!.sha256;
    expect(createHash('sha256').update(b.bytes).digest('hex')).to.equal(sha);
    expect(b.headers.get('etag')).to.equal(`"${sha}"`);
    expect(b.headers.get('etag')).to.equal(a.headers.get('etag'));

    const size = a.bytes.length;
    const start = Math.floor(size / 3);
    const end = size - 2;
    const ra = await download(`${writer!.url}${path}`, key, { Range: `bytes=${start}-${end}` });
    const rb = await download(`${other!.url}${path}`, key, { Range: `bytes=${start}-${end}`, 'If-Range': `"${sha}"` });
    expect(rb.status).to.equal(206);
    expect(rb.headers.get('content-range')).to.equal(`bytes ${start}-${end}/${size}`);
    expect(rb.bytes.equals(a.bytes.subarray(start, end + 1))).to.equal(true);
    expect(rb.bytes.equals(ra.bytes)).to.equal(true);

    const notModified = await download(`${other!.url}${path}`, key, { 'If-None-Match': `"${sha}"` });
    expect(notModified.status).to.equal(304);
  });

  it('gives the run lock to one service at a time', async () => {
    const lock = await writer!.services.exportFiles.lock();
    try {
      expect(lock).not.to.equal(null);
      expect(await other!.services.exportFiles.lock()).to.equal(null);
    } finally {
      await lock?.release();
    }
  });
});
