import { expect } from 'chai';
import { allProjections, readModelUnits } from '../../projections/index.js';
import { generationView } from '../../src/core/read-model-generations.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { systemClock } from '../../src/core/clock.js';
import { runCli, startListening, stopListening, until, type Exit, type ListeningCli } from '../support/processes.js';
import { FLEET_READ_STORE, enginesFor, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { demoKey } from '../support/server.js';

const NOW = '2019-02-15T12:00:00Z';

/** Every document of every read model, by collection. */
async function contents(reads: ReadStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const def of allProjections().flatMap((p) => p.collections)) {
    const docs: unknown[] = [];
    for await (const doc of reads.scan(def)) docs.push(doc);
    out[def.name] = docs;
  }
  return out;
}

/**
 * `scores replay` beside a running fleet (docs/scaling.md, "Replay beside a running fleet"): an API
 * process and a worker on the engines (PostgreSQL log; read models in PostgreSQL, or on the
 * MongoDB wire with SCORES_FLEET_READ_STORE=mongodb) keep serving while the replay builds a new
 * generation and switches it over. No Kafka: neither process needs the bus.
 */
describe(`scores replay beside a running fleet (engines; read models on ${FLEET_READ_STORE === 'postgres' ? 'PostgreSQL' : 'the MongoDB wire'})`, function () {
  this.timeout(600_000);
  const engines = enginesFor(FLEET_READ_STORE);
  const unset = unsetEngines(engines);
  if (unset.length > 0) {
    it(`runs on the engines when ${engines.join(' and ')} ${engines.length > 1 ? 'are' : 'is'} set (npm run engines prints them; unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let env: NodeJS.ProcessEnv;
  let database: string;
  let dir: string;
  let worker: ListeningCli | null = null;
  let api: ListeningCli | null = null;

  before(async () => {
    sandbox = await openEnginesSandbox('replayfleet', NOW, { readStore: FLEET_READ_STORE });
    ({ env, database, dir } = sandbox);
  });

  after(async () => {
    await stopListening(api);
    await stopListening(worker);
    await sandbox?.drop([`${database}_fresh`]);
  });

  it('switches every read model to a new generation while an API process answers a steady stream of calls, equal to a fresh replay, the old generation dropped', async () => {
    const seeded = await runCli(['seed', '--json'], env);
    expect(seeded.code, seeded.stderr).to.equal(0);
    worker = await startListening(['worker', '--jobs', 'projections'], env);
    api = await startListening(['serve', '--role', 'api'], env);
    await until(async () => (await fetch(`${api!.url}/readyz`)).status === 200, 120_000, 200);
    const key = demoKey(dir, 'hobbyist');
    const paths = ['/v1/scores/AAPL', '/v1/usage', '/v1/scores/MSFT/history?start=2019-01-16'];
    const failures: string[] = [];
    let calls = 0;
    let calling = true;
    // Paced under the hobbyist's rate (20 a second): every answer is the service's, not the limit's.
    const traffic = (async () => {
      for (let i = 0; calling; i++) {
        const path = paths[i % paths.length]!;
        const res = await fetch(`${api.url}${path}`, { headers: { 'X-API-Key': key } }).catch((err: Error) => ({ status: 0, text: async () => err.message }));
        calls++;
        if (res.status !== 200) failures.push(`${path}: ${res.status} ${await res.text()}`);
        await new Promise((r) => setTimeout(r, 60));
      }
    })();
    let replay: Exit;
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      replay = await runCli(['replay', '--json'], env);
      await new Promise((r) => setTimeout(r, 1_000)); // calls after the switch too
    } finally {
      calling = false;
      await traffic;
    }
    expect(replay.code, replay.stderr).to.equal(0);
    const result = JSON.parse(replay.stdout) as { generation: number; dropped: number[]; events: number; seconds: number };
    console.log(`      (replay of ${result.events} events into generation ${result.generation}: ${result.seconds.toFixed(1)} s; ${calls} calls served meanwhile)`);
    expect(result).to.include({ generation: 1 });
    expect(result.events, 'the whole log projected into generation 1').to.be.greaterThan(100);
    expect(result.dropped).to.deep.equal([0]);
    expect(calls).to.be.greaterThan(20);
    expect(failures, failures.slice(0, 5).join('\n')).to.deep.equal([]);

    // The live generation, once the worker projected the last calls, equals a fresh replay of the log.
    const events = new PostgresEventStore(env['POSTGRES_URL']!, systemClock);
    const store = sandbox.readModels().open();
    try {
      const live = generationView(store, 1);
      const projectors = allProjections().map((p) => p.name);
      await until(async () => {
        const head = await events.headPosition();
        const at = await Promise.all(projectors.map((p) => live.checkpoint(p)));
        return at.every((c) => c !== null && c >= head!);
      }, 60_000, 200);
      const place = sandbox.readModels('fresh');
      const fresh = await runCli(['replay', '--json'], { ...env, ...place.env });
      expect(fresh.code, fresh.stderr).to.equal(0);
      const rebuilt = place.open();
      const [served, replayed] = [await contents(live), await contents(rebuilt)];
      await rebuilt.close();
      expect(replayed['latest_scores']).to.have.length.greaterThan(100);
      for (const name of Object.keys(replayed)) expect(served[name], name).to.deep.equal(replayed[name]);

      // Generation 0 is gone: its collections (tables on PostgreSQL) and its checkpoints.
      const held = await sandbox.readModels().list();
      const names = new Set(held.collections);
      for (const unit of readModelUnits()) {
        for (const c of unit.projections.flatMap((p) => p.collections)) {
          expect(names.has(`rm_${c.name}`), `rm_${c.name} dropped`).to.equal(false);
          expect(names.has(`rm_g1_${c.name}`), `rm_g1_${c.name} live`).to.equal(true);
        }
      }
      expect(held.checkpoints.filter((id) => projectors.includes(id))).to.deep.equal([]);
    } finally {
      await store.close();
      await events.close();
    }
  });
});
