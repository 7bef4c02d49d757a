import { expect } from 'chai';
import { allProjections, readModelUnits } from '../../projections/index.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { systemClock } from '../../src/core/clock.js';
import { startListening, stopListening, until, type ListeningCli } from '../support/processes.js';
import { FLEET_ENGINES, FLEET_READ_STORE, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { demoKey, getJson } from '../support/server.js';

/**
 * A week of demo history: every call here needs only some of it, and seeding it and the worker's
 * catch-up (on FerretDB above all) are most of the suite's time (a quarter of history took minutes).
 */
const NOW = '2019-01-10T12:00:00Z';

/**
 * The split deployment on the engines (PostgreSQL log, Kafka bus, read models on FLEET_READ_STORE:
 * PostgreSQL, or the MongoDB wire with SCORES_FLEET_READ_STORE=mongodb), in `npm test` when the
 * engines' variables are set (`npm run test:fleet` runs test/fleet alone).
 */
describe(`Process roles on the engines: scores worker and scores serve --role api (read models on ${FLEET_READ_STORE === 'postgres' ? 'PostgreSQL' : 'the MongoDB wire'})`, function () {
  this.timeout(600_000);

  const unset = unsetEngines(FLEET_ENGINES);
  if (unset.length > 0) {
    it(`runs on the engines when ${FLEET_ENGINES.join(', ')} are set (npm run engines prints them; unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let worker: ListeningCli | null = null;
  let api: ListeningCli | null = null;

  before(async () => {
    sandbox = await openEnginesSandbox('roles', NOW, { kafka: true, readStore: FLEET_READ_STORE });
    ({ env, dir } = sandbox);
  });

  after(async () => {
    await stopListening(api, 'SIGKILL');
    await stopListening(worker, 'SIGKILL');
    await sandbox?.drop();
  });

  it('scores worker --jobs projections,webhooks serves /healthz, /readyz naming its jobs, /metrics, and no /v1 path', async () => {
    worker = await startListening(['worker', '--jobs', 'projections,webhooks'], env);
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
    // How far the read models are behind the log: what `scores fleet up` prints while its first API process waits.
    expect(ready.body['log_position']).to.match(/^\d+$/);
    expect(ready.body['lag_events']).to.be.a('number').and.at.least(0);
    const metrics = await fetch(`${worker.url}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.contain('scores_event_store_append_seconds');
    expect((await fetch(`${worker.url}/v1/scores/AAPL`)).status).to.equal(404);
  });

  it('scores serve --role api serves /v1/scores/AAPL with a demo key while the worker projects, and runs no job', async () => {
    api = await startListening(['serve', '--role', 'api'], env);
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
    const a = await startListening(['worker', '--jobs', 'alerts,invoices'], env);
    const b = await startListening(['worker', '--jobs', 'alerts,invoices'], env);
    type Jobs = { name: string; state: string }[];
    const jobsOf = async (p: ListeningCli) => ((await getJson(`${p.url}/readyz`)).body['jobs'] ?? []) as Jobs;
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
      await stopListening(owner, 'SIGKILL');
      await until(async () => stateOf(await jobsOf(other), 'alerts') === 'running' && stateOf(await jobsOf(other), 'invoices') === 'running', 60_000, 200);
      console.log(`      (hand-over after kill -9: ${Date.now() - killedAt} ms; lease ttl 15 s)`);
    } finally {
      await stopListening(a, 'SIGKILL');
      await stopListening(b, 'SIGKILL');
    }
  });

  it('hands every read model to a standby worker once the worker projecting them is killed (kill -9), which then projects new calls', async () => {
    const standby = await startListening(['worker', '--jobs', 'projections'], env);
    type Units = { name: string; state: string }[];
    const unitsOf = async (p: ListeningCli) => ((await getJson(`${p.url}/readyz`)).body['read_models'] ?? []) as Units;
    await until(async () => (await fetch(`${standby.url}/readyz`)).status === 200, 120_000, 200);
    // Each read model has one owner: the first worker runs every one, this one stands by for each.
    expect(await unitsOf(standby)).to.deep.equal(readModelUnits().map((u) => ({ name: u.name, state: 'standby' })));
    const killedAt = Date.now();
    await stopListening(worker, 'SIGKILL');
    worker = standby;
    await until(async () => (await unitsOf(standby)).every((u) => u.state === 'running'), 60_000, 200);
    console.log(`      (read models handed over after kill -9: ${Date.now() - killedAt} ms; lease ttl 15 s)`);
    // A metered call after the hand-over: every read model's checkpoint reaches it, through the new owner alone.
    expect((await getJson(`${api!.url}/v1/scores/AAPL`, demoKey(dir, 'hobbyist'))).status).to.equal(200);
    const events = new PostgresEventStore(env['POSTGRES_URL']!, systemClock);
    const reads = sandbox.readModels().open();
    try {
      const head = (await events.headPosition())!;
      await until(async () => (await Promise.all(allProjections().map((p) => reads.checkpoint(p.name)))).every((c) => c !== null && c >= head), 30_000, 200);
    } finally {
      await reads.close();
      await events.close();
    }
  });

  it('stops the worker cleanly on SIGTERM', async () => {
    await stopListening(api);
    const exit = await stopListening(worker);
    expect(exit?.code, exit?.stderr).to.equal(0);
  });
});
