import { expect } from 'chai';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAccountWithKey, revokeKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { PostgresTokenBuckets } from '../../infra/postgresql/rate-limits.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { createApp } from '../../src/app/http/app.js';
import type { LedgerMeter } from '../../src/app/metering/meter.js';
import type { Meter } from '../../src/web/meter.port.js';
import { RATE_BURST_FACTOR } from '../../src/domain/plans.js';
import { FLEET_READ_STORE, enginesFor, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { until } from '../support/processes.js';
import { startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

const NOW = '2019-01-15T12:00:00Z';

/**
 * Two API replicas on one PostgreSQL log, one PostgreSQL rate-limit table and one read store
 * (PostgreSQL, the recommended deployment; FerretDB, the MongoDB wire, with
 * SCORES_FLEET_READ_STORE=mongodb), in a sandbox of their own for this run: replica A is the whole
 * service (it seeds and projects), replica B serves the API only (no projector, as
 * `serve --role api`, and a data directory of its own), so that what B knows of a key comes from
 * the shared stores, never from its own projections.
 */
describe(`State the API replicas share: the rate limit and key revocation (PostgreSQL log, ${FLEET_READ_STORE === 'postgres' ? 'PostgreSQL' : 'FerretDB'} read models)`, function () {
  this.timeout(300_000);
  const engines = enginesFor(FLEET_READ_STORE);
  const unset = unsetEngines(engines);
  if (unset.length > 0) {
    it(`runs when ${engines.join(' and ')} ${engines.length > 1 ? 'are' : 'is'} set (npm run engines starts them and prints them; unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let bDir: string | undefined;
  let a: TestServer;
  let b: { url: string; services: Services; server: Server };
  // A free call: a metered one would also debit the account's ledger from two writers at once.
  const get = (url: string, key: string) => fetch(`${url}/v1/usage`, { headers: { 'X-API-Key': key } });

  before(async () => {
    sandbox = await openEnginesSandbox('limits', NOW, { readStore: FLEET_READ_STORE });
    // A take slower than the default 250 ms would be decided by the replica alone (the outage
    // fallback, tested in shared-buckets.test.ts); on a loaded CI machine 10 takes queued on one row can be.
    const env = { ...sandbox.vars, RATE_LIMIT_STORE_TIMEOUT_MS: '10000' };
    a = await startTestServer({ now: NOW, dir: sandbox.dir, env });
    bDir = tempDir('scores-replica-b-');
    const services = await openServices(loadConfig(testEnv(bDir, NOW, env)));
    const server = createApp(services).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    b = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, services, server };
  });

  after(async () => {
    b?.server.closeAllConnections();
    await new Promise((resolve) => (b ? b.server.close(resolve) : resolve(undefined)));
    await b?.services.close();
    await a?.stop();
    await sandbox?.drop();
    if (bDir) rmSync(bDir, { recursive: true, force: true });
  });

  /** A new account with a key, known to the read models both replicas read. */
  const newKey = async (perSecond?: number) => {
    const k = await createAccountWithKey(a.services, { tier: 'hobbyist' });
    if (perSecond !== undefined) await setRateLimit(a.services, k.account_id, perSecond);
    await a.services.runner.waitForHead();
    return k;
  };

  it('takes exactly one token per call from one bucket in PostgreSQL, whichever of two stores asks', async () => {
    const url = sandbox.vars['POSTGRES_URL']!;
    const stores = [new PostgresTokenBuckets(url), new PostgresTokenBuckets(url)];
    try {
      // 0.001 a second: no token comes back while the takes run.
      const takes = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 2]!.take(`bucket-${sandbox.database}`, 0.001, 10)));
      expect(takes.filter((t) => t.allowed)).to.have.length(10);
      expect(Math.min(...takes.map((t) => t.tokens))).to.be.at.least(0);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it("answers concurrent takes together (a statement for many), each as the row's takes one after another would", async () => {
    const url = sandbox.vars['POSTGRES_URL']!;
    const store = new PostgresTokenBuckets(url);
    const admin = await pgSession(url);
    const commits = async () => Number((await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()'))[0]!.n);
    try {
      await store.take(`warm-${sandbox.database}`, 1, 2); // the table and a connection
      const before = await commits();
      // Two buckets, 0.001 a second: 10 and 3 tokens, no token comes back while the takes run.
      const ids = [`ten-${sandbox.database}`, `three-${sandbox.database}`];
      const takes = await Promise.all(Array.from({ length: 60 }, (_, i) => store.take(ids[i % 2]!, 0.001, i % 2 === 0 ? 10 : 3)));
      const statements = (await commits()) - before - 1; // the count's own transaction is one more
      const of = (k: number) => takes.filter((_, i) => i % 2 === k);
      // In arrival order: the first ones allowed, each leaving one token fewer, then refused at what is left.
      expect(of(0).map((t) => t.allowed)).to.deep.equal(Array.from({ length: 30 }, (_, i) => i < 10));
      expect(of(0).slice(0, 10).map((t) => Math.round(t.tokens))).to.deep.equal([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect(of(1).filter((t) => t.allowed)).to.have.length(3);
      expect(Math.min(...takes.map((t) => t.tokens))).to.be.at.least(0);
      // One statement per take would be 60 commits.
      expect(statements, `${statements} statements for 60 takes`).to.be.at.most(5);
    } finally {
      await admin.end();
      await store.close();
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
    const holder = await pgSession(sandbox.vars['POSTGRES_URL']!);
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

  it('refuses a key revoked on replica A on replica B as soon as the revocation reaches B, before any cached lookup of it expires', async () => {
    const k = await newKey();
    // B has looked the key up (and caches the answer).
    expect((await get(b.url, k.key)).status).to.equal(200);
    expect((await get(b.url, k.key)).status).to.equal(200);
    // When B's follower of the log hands the revocation to its meter: B's only way to learn of it
    // besides its key lookup's cache (5 s) running out, which the next call cannot wait for.
    // The meter the calls charge through wraps B's LedgerMeter (the request log notes each charge).
    const meter = (b.services.meter as Meter & { inner: LedgerMeter }).inner;
    const seen = meter.keyEventsSeen.bind(meter);
    let reached = false;
    meter.keyEventsSeen = (batch) => {
      seen(batch);
      if (batch.some((e) => e.type === 'ApiKeyRevoked' && (e.data as { key_id?: string } | null)?.key_id === k.key_id)) reached = true;
    };
    try {
      const revoked = performance.now();
      await revokeKey(a.services, k.key_id);
      await until(() => reached, 60_000, 5);
      const res = await get(b.url, k.key);
      console.log(`      the revocation reached replica B ${(performance.now() - revoked).toFixed(0)} ms after it was made on A`);
      expect(res.status).to.equal(403);
    } finally {
      meter.keyEventsSeen = seen;
    }
  });

});
