import { expect } from 'chai';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { seedIfEmpty } from '../../src/app/server.js';
import { replayIntoNewGeneration } from '../../src/app/replay-generations.js';
import { generationView } from '../../src/core/read-model-generations.js';
import { allProjections, readModelUnits } from '../../projections/index.js';
import { until } from '../support/processes.js';
import { enginesFor, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';

const NOW = '2019-01-04T12:00:00Z';

/**
 * `scores replay` on a shared read store with no worker projecting (a stopped fleet): nobody takes
 * the hand-over, so the replay brings each read model's new generation up and switches it itself,
 * then drops the old one; a reader following the generations reads the new one (docs/scaling.md,
 * "Replay beside a running fleet", step 4). The fleet case is test/fleet/replay-beside-fleet.test.ts.
 * On each shared read store: PostgreSQL (the generations' namespace is the schema) and the
 * MongoDB wire (FerretDB; the namespace is the database), each with its log in PostgreSQL.
 */
for (const readStore of ['postgres', 'mongodb'] as const) {
  describe(`scores replay into a new generation, no worker running (engines; read models on ${readStore === 'postgres' ? 'PostgreSQL' : 'the MongoDB wire'})`, function () {
    this.timeout(300_000);
    const engines = enginesFor(readStore);
    const unset = unsetEngines(engines);
    if (unset.length > 0) {
      it(`runs on the engines when ${engines.join(' and ')} ${engines.length > 1 ? 'are' : 'is'} set (npm run engines prints them; unset: ${unset.join(', ')})`);
      return;
    }
    let sandbox: EnginesSandbox;
    let services: Services | null = null;

    before(async () => {
      sandbox = await openEnginesSandbox('replaygen', NOW, { readStore });
      services = await openServices(loadConfig(sandbox.env), { readModels: 'follow' });
      await seedIfEmpty(services, { progress: false });
    });

    after(async () => {
      await services?.close();
      await sandbox?.drop();
    });

    const checkpoints = (generation: number) => Promise.all(allProjections().map((p) => generationView(services!.readModels.base, generation).checkpoint(p.name)));

    it('builds an empty read store in place, then each replay into the next generation, switched by the replay itself and the old one dropped', async () => {
      const s = services!;
      // The log as seeded (the replay's own lease events come after it).
      const head = (await s.events.headPosition())!;
      const first = await replayIntoNewGeneration(s, { takeoverMs: 100, graceMs: 300 });
      expect(first).to.deep.include({ generation: 0, previous: [] });
      expect(first.events).to.be.greaterThan(0);
      // Its own lease events included: an all-in-one process projecting the same log reaches the same checkpoints.
      const done = (await s.events.headPosition())!;
      expect(done > head, 'the replay took its lease in the log').to.equal(true);
      expect((await checkpoints(0)).every((c) => c === done), 'generation 0 built to the head').to.equal(true);

      const second = await replayIntoNewGeneration(s, { takeoverMs: 100, graceMs: 300 });
      expect(second).to.deep.include({ generation: 1, previous: [0] });
      const state = await s.readModels.generations.current();
      expect(Object.keys(state.units).sort()).to.deep.equal(readModelUnits().map((u) => u.name).sort());
      for (const unit of Object.values(state.units)) expect(unit, unit.unit).to.include({ live: 1, next: null, taking: null });
      expect(state.retired, 'generation 0 dropped').to.deep.equal([]);
      const now = (await s.events.headPosition())!;
      expect((await checkpoints(1)).every((c) => c !== null && c >= head && c <= now), 'generation 1 built').to.equal(true);
      expect((await checkpoints(0)).every((c) => c === null), 'generation 0 checkpoints dropped').to.equal(true);
      // The reader's view follows the switch (it reads the generations every 250 ms): waited for, not slept on.
      const live = (await checkpoints(1))[0];
      await until(async () => (await s.reads.checkpoint(allProjections()[0]!.name)) === live, 60_000, 50);

      const third = await replayIntoNewGeneration(s, { takeoverMs: 100, graceMs: 300 });
      expect(third).to.deep.include({ generation: 2, previous: [1] });
      expect((await checkpoints(1)).every((c) => c === null), 'generation 1 checkpoints dropped').to.equal(true);
      // In the store itself: generation 2's collections (tables on PostgreSQL), none of the two before.
      const held = new Set((await sandbox.readModels().list()).collections);
      for (const c of allProjections().flatMap((p) => p.collections)) {
        expect(held.has(`rm_g2_${c.name}`), `rm_g2_${c.name} live`).to.equal(true);
        expect(held.has(`rm_g1_${c.name}`) || held.has(`rm_${c.name}`), `rm_${c.name}, rm_g1_${c.name} dropped`).to.equal(false);
      }
    });
  });
}
