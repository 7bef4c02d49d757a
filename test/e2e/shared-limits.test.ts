import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAccountWithKey, revokeKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { pgSession, withDatabase, type PgSession } from '../../infra/postgresql/database.js';
import { PostgresTokenBuckets } from '../../infra/postgresql/rate-limits.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { createApp } from '../../src/app/http/app.js';
import { RATE_BURST_FACTOR } from '../../src/domain/plans.js';
import { startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

const NOW = '2019-01-15T12:00:00Z';
const MONGODB_URI = process.env['MONGODB_URI'];

/**
 * Two API replicas on one PostgreSQL log and one read store (FerretDB, the MongoDB wire, when
 * MONGODB_URI is set; else both read the one embedded read-model file), each in a database of its
 * own for this run: replica A is the whole service (it seeds and projects), replica B serves the
 * API only (no projector, as `serve --role api`), so that what B knows of a key comes from the
 * shared stores, never from its own projections.
 */
describe(`State the API replicas share: the rate limit and key revocation (PostgreSQL log, ${MONGODB_URI ? 'FerretDB' : 'one SQLite file of'} read models)`, function () {
  this.timeout(300_000);
  if (!process.env['POSTGRES_URL']) {
    it('runs when POSTGRES_URL is set (npm run engines starts PostgreSQL and prints it; MONGODB_URI too moves the read models to FerretDB)');
    return;
  }
  const run = randomUUID().replaceAll('-', '').slice(0, 10);
  const database = `scores_limits_${run}`;
  const dir = tempDir('scores-shared-limits-');
  let admin: PgSession;
  let a: TestServer;
  let b: { url: string; services: Services; server: Server };
  // A free call: a metered one would also debit the account's ledger from two writers at once.
  const get = (url: string, key: string) => fetch(`${url}/v1/usage`, { headers: { 'X-API-Key': key } });

  before(async () => {
    admin = await pgSession(process.env['POSTGRES_URL']!);
    await admin.query(`CREATE DATABASE ${database}`);
    const log = withDatabase(process.env['POSTGRES_URL']!, database);
    // A take slower than the default 250 ms would be decided by the replica alone (the outage
    // fallback, tested in shared-buckets.test.ts); on a loaded CI machine 10 takes queued on one row can be.
    const shared = { POSTGRES_URL: log, RATE_LIMIT_STORE_TIMEOUT_MS: '10000' };
    const env: Record<string, string> = MONGODB_URI ? { ...shared, MONGODB_URI, MONGODB_DB: database } : shared;
    a = await startTestServer({ now: NOW, dir, env });
    // Without MONGODB_URI, B reads the read models A writes in the data directory they share.
    const services = await openServices(loadConfig(testEnv(MONGODB_URI ? tempDir('scores-replica-b-') : dir, NOW, env)));
    const server = createApp(services).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    b = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, services, server };
  });

  after(async () => {
    b?.server.closeAllConnections();
    await new Promise((resolve) => (b ? b.server.close(resolve) : resolve(undefined)));
    await b?.services.close();
    await a?.stop();
    if (MONGODB_URI) {
      const store = new MongoReadStore(MONGODB_URI, database);
      await store.dropDatabase().catch(() => undefined);
      await store.close();
    }
    await admin?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new account with a key, known to the read models both replicas read. */
  const newKey = async (perSecond?: number) => {
    const k = await createAccountWithKey(a.services, { tier: 'hobbyist' });
    if (perSecond !== undefined) await setRateLimit(a.services, k.account_id, perSecond);
    await a.services.runner.waitForHead();
    return k;
  };

  it('takes exactly one token per call from one bucket in PostgreSQL, whichever of two stores asks', async () => {
    const url = withDatabase(process.env['POSTGRES_URL']!, database);
    const stores = [new PostgresTokenBuckets(url), new PostgresTokenBuckets(url)];
    try {
      // 0.001 a second: no token comes back while the takes run.
      const takes = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 2]!.take(`bucket-${run}`, 0.001, 10)));
      expect(takes.filter((t) => t.allowed)).to.have.length(10);
      expect(Math.min(...takes.map((t) => t.tokens))).to.be.at.least(0);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it("shares an account's burst between the replicas: N calls spread over both get the bucket's allowance, the rest 429 with today's headers", async () => {
    // Warm both replicas (their pools' connections, the table) with another account.
    const warm = await newKey();
    const warming = await Promise.all(Array.from({ length: 8 }, (_, i) => get(i % 2 === 0 ? a.url : b.url, warm.key)));
    expect(warming.map((r) => r.status)).to.include(200);

    const perSecond = 1;
    const burst = perSecond * RATE_BURST_FACTOR;
    const k = await newKey(perSecond);
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(i % 2 === 0 ? a.url : b.url, k.key)));
    const seconds = (performance.now() - started) / 1000;
    const ok = answers.filter((r) => r.status === 200);
    const limited = answers.filter((r) => r.status === 429);
    const others = await Promise.all(answers.filter((r) => r.status !== 200 && r.status !== 429).map(async (r) => `${r.status} ${await r.text()}`));
    expect(others).to.deep.equal([]);
    // One bucket: its burst, plus what it refilled if the calls took a second or more (two buckets would answer twice the burst).
    expect(ok.length, `${ok.length} answered in ${seconds.toFixed(2)} s`).to.be.at.least(burst).and.at.most(burst + Math.floor(seconds * perSecond));
    if (seconds < 1) expect(ok.length).to.equal(burst);
    for (const r of limited) {
      expect(r.headers.get('ratelimit-policy')).to.equal(`"per-account";q=${burst};w=${RATE_BURST_FACTOR}`);
      expect(r.headers.get('ratelimit')).to.match(/^"per-account";r=0;t=\d+$/);
      expect(Number(r.headers.get('retry-after'))).to.be.at.least(1);
      expect(((await r.json()) as { code: string }).code).to.equal('rate_limited');
    }
    console.log(`      ${answers.length} calls over two replicas in ${seconds.toFixed(2)} s: ${ok.length} answered (burst ${burst}), ${limited.length} refused`);
  });

  it('waits RATE_LIMIT_STORE_TIMEOUT_MS (10 s here) for the shared bucket: a take held up by a lock on its row is answered once the lock goes', async () => {
    const k = await newKey();
    expect((await get(b.url, k.key)).status).to.equal(200); // the account's row exists
    const holder = await pgSession(withDatabase(process.env['POSTGRES_URL']!, database));
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT tokens FROM scores.rate_buckets WHERE id = $1 FOR UPDATE', [k.account_id]);
      let answered = false;
      const call = get(b.url, k.key).then((r) => ((answered = true), r));
      // With the default 250 ms the replica would have answered alone by now.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(answered, 'answered while the bucket row was locked').to.equal(false);
      await holder.query('COMMIT');
      expect((await call).status).to.equal(200);
    } finally {
      await holder.end();
    }
  });

  it('refuses a key revoked on replica A on replica B within a second', async () => {
    const k = await newKey();
    // B has looked the key up (and caches the answer).
    expect((await get(b.url, k.key)).status).to.equal(200);
    expect((await get(b.url, k.key)).status).to.equal(200);
    const revoked = performance.now();
    await revokeKey(a.services, k.key_id);
    let status = 200;
    while (performance.now() - revoked < 5000) {
      status = (await get(b.url, k.key)).status;
      if (status === 403) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ms = performance.now() - revoked;
    console.log(`      refused on replica B ${ms.toFixed(0)} ms after the revocation on replica A`);
    expect(status).to.equal(403);
    expect(ms).to.be.below(1000);
  });
});
