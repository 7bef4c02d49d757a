import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { allProjections, readModelUnits } from '../../projections/index.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { systemClock } from '../../src/core/clock.js';
import { pgSession, withDatabase, type PgSession } from '../../infra/postgresql/database.js';
import { spawnCli, until, type Exit } from '../support/processes.js';
import { demoKey, getJson, tempDir, testEnv } from '../support/server.js';

/**
 * A week of demo history: every call here needs only some of it, and seeding it and the worker's
 * catch-up on FerretDB are most of the suite's time (a quarter of history took minutes).
 */
const NOW = '2019-01-10T12:00:00Z';
const ENGINES = ['KAFKA_BROKERS', 'MONGODB_URI', 'POSTGRES_URL'] as const;

interface Proc {
  url: string;
  child: ChildProcess;
  done: Promise<Exit>;
}

/** A CLI process; resolves once stderr names the URL it listens on. */
async function start(args: string[], env: NodeJS.ProcessEnv): Promise<Proc> {
  const { child, done } = spawnCli(args, env);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const listening = /listening on (http:\/\/\S+)/;
  await until(() => listening.test(err) || child.exitCode !== null, 240_000, 100);
  if (!listening.test(err)) throw new Error(`scores ${args.join(' ')} exited before listening:\n${(await done).stderr}`);
  return { url: listening.exec(err)![1]!, child, done };
}

async function stop(proc: Proc | null, signal: NodeJS.Signals = 'SIGTERM'): Promise<Exit | null> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return null;
  proc.child.kill(signal);
  return proc.done;
}

/**
 * The split deployment on the engines, in `npm test` when the engines' variables are set
 * (`npm run test:fleet` runs test/fleet alone).
 */
describe('Process roles on the engines: scores worker and scores serve --role api', function () {
  this.timeout(600_000);

  const unset = ENGINES.filter((name) => !process.env[name]);
  if (unset.length > 0) {
    it(`runs on the engines when ${ENGINES.join(', ')} are set (npm run engines prints them; unset: ${unset.join(', ')})`);
    return;
  }
  const run = randomUUID().replaceAll('-', '').slice(0, 10);
  const database = `scores_roles_${run}`;
  const dir = tempDir('scores-roles-e2e-');
  let env: NodeJS.ProcessEnv;
  let admin: PgSession;
  let worker: Proc | null = null;
  let api: Proc | null = null;

  before(async () => {
    admin = await pgSession(process.env['POSTGRES_URL']!);
    await admin.query(`CREATE DATABASE ${database}`);
    env = testEnv(dir, NOW, {
      POSTGRES_URL: withDatabase(process.env['POSTGRES_URL']!, database),
      MONGODB_URI: process.env['MONGODB_URI']!,
      MONGODB_DB: database,
      KAFKA_BROKERS: process.env['KAFKA_BROKERS']!,
      KAFKA_TOPIC_PREFIX: `roles-${run}.`,
    });
  });

  after(async () => {
    await stop(api, 'SIGKILL');
    await stop(worker, 'SIGKILL');
    const reads = new MongoReadStore(process.env['MONGODB_URI']!, database);
    await reads.dropDatabase().catch(() => undefined);
    await reads.close();
    await admin?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('scores worker --jobs projections,webhooks serves /healthz, /readyz naming its jobs, /metrics, and no /v1 path', async () => {
    worker = await start(['worker', '--jobs', 'projections,webhooks'], env);
    expect((await getJson(`${worker.url}/healthz`)).body).to.include({ status: 'ok', role: 'worker' });
    await until(async () => (await fetch(`${worker!.url}/readyz`)).status === 200, 120_000, 200);
    // Ready once every job started; a leased job is `standby` until its lease is taken and the
    // job (webhooks: a Kafka consumer group to join) has started, which may come a little later.
    let ready = await getJson(`${worker.url}/readyz`);
    const jobs = () => ready.body['jobs'] as { name: string; state: string }[];
    expect(jobs().map((j) => j.name)).to.deep.equal(['projections', 'webhooks']);
    expect(jobs()[0]!.state).to.equal('running');
    await until(async () => {
      ready = await getJson(`${worker!.url}/readyz`);
      return jobs().every((j) => j.state === 'running');
    }, 60_000, 200);
    expect(jobs()).to.deep.equal([
      { name: 'projections', state: 'running' },
      { name: 'webhooks', state: 'running' },
    ]);
    expect(ready.status).to.equal(200);
    expect(ready.body['waits_for']).to.be.a('string');
    // `projections` is one leased unit per read model: alone, this worker runs every one.
    expect(ready.body['read_models']).to.deep.equal(readModelUnits().map((u) => ({ name: u.name, state: 'running' })));
    const metrics = await fetch(`${worker.url}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.contain('scores_event_store_append_seconds');
    expect((await fetch(`${worker.url}/v1/scores/AAPL`)).status).to.equal(404);
  });

  it('scores serve --role api serves /v1/scores/AAPL with a demo key while the worker projects, and runs no job', async () => {
    api = await start(['serve', '--role', 'api'], env);
    const key = demoKey(dir, 'hobbyist');
    await until(async () => (await fetch(`${api!.url}/readyz`)).status === 200, 120_000, 200);
    const score = await getJson(`${api.url}/v1/scores/AAPL`, key);
    expect(score.status, JSON.stringify(score.body)).to.equal(200);
    expect(score.body['ticker']).to.equal('AAPL');
    // The key's usage reaches the read models through the worker's projections (read-your-writes).
    const usage = await getJson(`${api.url}/v1/usage`, key);
    expect(usage.status, JSON.stringify(usage.body)).to.equal(200);
  });

  it('runs each leased job in one of two workers, and in the other once the owner is killed (kill -9)', async () => {
    const a = await start(['worker', '--jobs', 'alerts,invoices'], env);
    const b = await start(['worker', '--jobs', 'alerts,invoices'], env);
    type Jobs = { name: string; state: string }[];
    const jobsOf = async (p: Proc) => ((await getJson(`${p.url}/readyz`)).body['jobs'] ?? []) as Jobs;
    const stateOf = (jobs: Jobs, name: string) => jobs.find((j) => j.name === name)?.state;
    try {
      let seen: [Jobs, Jobs] = [[], []];
      await until(async () => {
        seen = [await jobsOf(a), await jobsOf(b)];
        return ['alerts', 'invoices'].every((n) => [stateOf(seen[0], n), stateOf(seen[1], n)].sort().join() === 'running,standby');
      }, 60_000, 200);
      const owner = stateOf(seen[0], 'alerts') === 'running' ? a : b;
      const other = owner === a ? b : a;
      const killedAt = Date.now();
      await stop(owner, 'SIGKILL');
      await until(async () => stateOf(await jobsOf(other), 'alerts') === 'running' && stateOf(await jobsOf(other), 'invoices') === 'running', 60_000, 200);
      console.log(`      (hand-over after kill -9: ${Date.now() - killedAt} ms; lease ttl 15 s)`);
    } finally {
      await stop(a, 'SIGKILL');
      await stop(b, 'SIGKILL');
    }
  });

  it('hands every read model to a standby worker once the worker projecting them is killed (kill -9), which then projects new calls', async () => {
    const standby = await start(['worker', '--jobs', 'projections'], env);
    type Units = { name: string; state: string }[];
    const unitsOf = async (p: Proc) => ((await getJson(`${p.url}/readyz`)).body['read_models'] ?? []) as Units;
    await until(async () => (await fetch(`${standby.url}/readyz`)).status === 200, 120_000, 200);
    // Each read model has one owner: the first worker runs every one, this one stands by for each.
    expect(await unitsOf(standby)).to.deep.equal(readModelUnits().map((u) => ({ name: u.name, state: 'standby' })));
    const killedAt = Date.now();
    await stop(worker, 'SIGKILL');
    worker = standby;
    await until(async () => (await unitsOf(standby)).every((u) => u.state === 'running'), 60_000, 200);
    console.log(`      (read models handed over after kill -9: ${Date.now() - killedAt} ms; lease ttl 15 s)`);
    // A metered call after the hand-over: every read model's checkpoint reaches it, through the new owner alone.
    expect((await getJson(`${api!.url}/v1/scores/AAPL`, demoKey(dir, 'hobbyist'))).status).to.equal(200);
    const events = new PostgresEventStore(env['POSTGRES_URL']!, systemClock);
    const reads = new MongoReadStore(env['MONGODB_URI']!, database);
    try {
      const head = (await events.headPosition())!;
      await until(async () => (await Promise.all(allProjections().map((p) => reads.checkpoint(p.name)))).every((c) => c !== null && c >= head), 30_000, 200);
    } finally {
      await reads.close();
      await events.close();
    }
  });

  it('stops the worker cleanly on SIGTERM', async () => {
    await stop(api);
    const exit = await stop(worker);
    expect(exit?.code, exit?.stderr).to.equal(0);
  });
});
