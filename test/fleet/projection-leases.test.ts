import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { seedIfEmpty } from '../../src/app/server.js';
import { startJobs, type RunningJobs } from '../../src/app/background-workers.js';
import { fixedClock } from '../../src/core/clock.js';
import { advanceDemo } from '../../commands/seed-demo/seed-demo.handler.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { fencedReadStore } from '../../src/core/fenced-read-store.js';
import { JobLease, LeaseLostError, holderOf, lastEventOf, leaseStreamOf } from '../../src/core/lease.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { allProjections, readModelUnits } from '../../projections/index.js';
import { enginesFor, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';

const NOW = '2019-01-10T12:00:00Z';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** The demo's publications of a few more days: new events for every read model of scores. */
async function advance(services: Services): Promise<void> {
  const result = await advanceDemo({ store: services.events, clock: fixedClock('2019-01-16T12:00:00Z'), dataset: new DemoDataset({ seed: services.config.demoSeed }) });
  expect(result.events).to.be.greaterThan(0);
}

/** Who holds each read model's lease now (null: nobody). */
async function holders(services: Services): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  for (const unit of readModelUnits()) {
    const last = await lastEventOf(services.events, leaseStreamOf(`projection-${unit.name}`), 0);
    out.set(unit.name, holderOf(last, new Date())?.owner ?? null);
  }
  return out;
}

/** Every projection's checkpoint has reached the log head. */
async function caughtUp(services: Services): Promise<boolean> {
  const head = await services.events.headPosition();
  const checkpoints = await Promise.all(allProjections().map((p) => services.readModels.base.checkpoint(p.name)));
  return checkpoints.every((c) => c !== null && head !== null && c >= head);
}

/**
 * `projections` in `scores worker`: one leased unit per read model (`lease-projection-<model>`).
 * On the engines, each in a database of its own: the log in PostgreSQL, the read models in
 * PostgreSQL (the recommended deployment) and, in a second run, on the MongoDB wire (FerretDB).
 */
for (const readStore of ['postgres', 'mongodb'] as const) {
  describe(`Projections per read model, leased (scores worker; read models on ${readStore === 'postgres' ? 'PostgreSQL' : 'the MongoDB wire'})`, function () {
    this.timeout(300_000);
    const engines = enginesFor(readStore);
    const unset = unsetEngines(engines);
    if (unset.length > 0) {
      it(`runs on the engines when ${engines.join(' and ')} ${engines.length > 1 ? 'are' : 'is'} set (npm run engines prints them; unset: ${unset.join(', ')})`);
      return;
    }
    let sandbox: EnginesSandbox;
    const opened: Services[] = [];
    const jobs: RunningJobs[] = [];
    const open = async () => {
      const services = await openServices(loadConfig(sandbox.env), { readModels: 'follow' });
      opened.push(services);
      return services;
    };

    before(async () => {
      sandbox = await openEnginesSandbox('projlease', NOW, { readStore });
      const seeding = await open();
      await seedIfEmpty(seeding, { progress: false });
    });

    after(async () => {
      // Bounded: a store that stopped answering must not hold the report back.
      const bounded = (p: Promise<unknown>) => Promise.race([p.catch(() => undefined), sleep(10_000)]);
      for (const j of jobs) await bounded(j.stop());
      for (const s of opened) await bounded(s.close());
      await sandbox?.drop();
    });

    it('splits the read models between two workers started 400 ms apart, one holder each, and hands a stopped worker’s read models to the other', async () => {
      const [one, two] = [await open(), await open()];
      // Apart, as `scores fleet up` starts them: the first up must not take every read model at once.
      const starting = startJobs(one, ['projections'], { dataset: null, leases: true });
      await sleep(400);
      const [a, b] = await Promise.all([starting, startJobs(two, ['projections'], { dataset: null, leases: true })]);
      jobs.push(a, b);
      const units = readModelUnits().map((u) => u.name);
      expect(units).to.include.members(['market-data', 'accounts', 'latest-scores']);

      await waitUntil(async () => [...(await holders(one)).values()].every((h) => h !== null), 30_000, 'every read model owned');
      const owners = await holders(one);
      // Exactly one holder per read model (a lease has one), one of the two workers' ids.
      expect(new Set(owners.values()).size, 'both workers hold read models').to.equal(2);
      await waitUntil(() => caughtUp(one), 60_000, 'the read models projected up to the head');

      // A worker that owns read models stops: they go to the other at once (the stop releases them).
      const [stopping, staying] = a.states()[0]!.state === 'running' ? [a, b] : [b, a];
      const stayingServices = stopping === a ? two : one;
      await stopping.stop();
      await waitUntil(async () => {
        const now = [...(await holders(one)).values()];
        return now.every((h) => h !== null) && new Set(now).size === 1;
      }, 10_000, 'hand-over after a stop');
      const after = (await holders(one)).get('accounts')!;
      const handedOver = [...owners.values()].filter((o) => o !== after);
      expect(handedOver.length, 'read models the stopped worker held, now the other’s').to.be.greaterThan(0);
      expect(staying.states()).to.deep.equal([{ name: 'projections', state: 'running' }]);

      // New events (the demo's next publication) are projected by the remaining worker.
      await advance(stayingServices);
      const head = await one.events.headPosition();
      await waitUntil(() => caughtUp(one), 60_000, `projected up to ${head} after the hand-over`);
    });

    it('refuses a read-model commit once another worker took the lease (the fence), and writes nothing; commits checkpoints alone', async () => {
      const [services] = opened;
      const job = `projection-fence-${randomUUID().slice(0, 8)}`;
      // The paused owner's clock stands still (its lease looks valid to it); the next owner's is past the expiry.
      const pausedClock = fixedClock('2026-01-01T00:00:00Z');
      const paused = new JobLease(services!.events, pausedClock, { job, owner: 'paused', ttlMs: 10_000 });
      const next = new JobLease(services!.events, fixedClock('2026-01-01T00:00:11Z'), { job, owner: 'next', ttlMs: 10_000 });
      const def = defineCollection<{ id: string }>({ name: `fence_${job.slice(-8)}`, key: (d) => d.id, fields: [], indexes: [] });
      const base = services!.readModels.base;
      await base.register([def]);
      expect(await paused.acquire()).to.equal(true);
      const fenced = fencedReadStore(base, paused);
      await fenced.commit({ writes: [{ op: 'upsert', collection: def.name, id: 'a', doc: { id: 'a' } }], checkpoints: { [job]: '1' } });
      expect(await next.acquire(), 'taken once expired').to.equal(true);
      expect(paused.valid, 'valid by the paused owner’s own clock').to.equal(true);
      const refused = await fenced.commit({ writes: [{ op: 'upsert', collection: def.name, id: 'b', doc: { id: 'b' } }], checkpoints: { [job]: '2' } }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(LeaseLostError);
      expect(await base.get(def, 'b')).to.equal(null);
      expect(await base.checkpoint(job)).to.equal('1');
      // Checkpoints alone are the same whoever commits them: no lease read, and never moved back.
      await fenced.commit({ writes: [], checkpoints: { [job]: '3' } });
      await fenced.commit({ writes: [], checkpoints: { [job]: '2' } });
      expect(await base.checkpoint(job)).to.equal('3');
    });
  });
}
