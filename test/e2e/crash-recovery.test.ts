import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../infra/sqlite/database.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { runCli, spawnCli, until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2019-09-30T23:00:00Z';

/** Counts rows in a table of the store file, read by a separate read-only connection. */
function countRows(dir: string, sql: string): number {
  try {
    const db = openSqlite(join(dir, 'scores.sqlite'), { readonly: true });
    try {
      return (db.prepare(sql).get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** Events of the log except the demo's progress markers, as (stream, type, id). */
async function dataEvents(dir: string) {
  const services = await openServices(loadConfig(testEnv(dir, NOW)));
  try {
    const out: string[] = [];
    let after: string | null = null;
    for (;;) {
      const batch = await services.events.readAll({ after, maxCount: 1000 });
      if (!batch.length) break;
      for (const e of batch) if (e.streamId !== 'demo') out.push(`${e.streamId} ${e.type} ${e.id}`);
      after = batch[batch.length - 1]!.position;
    }
    return out;
  } finally {
    await services.close();
  }
}

/** Read models caught up with the log, compared with a fresh rebuild from the log. */
async function readModelsMatchReplay(dir: string) {
  const services = await openServices(loadConfig(testEnv(dir, NOW)));
  try {
    await services.runner.start();
    const live = await snapshotReadModels(services);
    await services.runner.replay();
    const rebuilt = await snapshotReadModels(services);
    expect(rebuilt).to.deep.equal(live);
    return live;
  } finally {
    await services.close();
  }
}

describe('Crash recovery (kill -9)', function () {
  this.timeout(180_000);

  const expected = new DemoDataset({})
    .appendsBetween(null, new Date(NOW))
    .flatMap((a) => a.events.map((e) => `${a.streamId} ${e.type} ${e.id}`));

  for (const phase of ['writing events', 'building read models'] as const) {
    describe(`When seeding is killed while ${phase}, then run again`, () => {
      const dir = tempDir();
      after(() => rmSync(dir, { recursive: true, force: true }));

      it('loses and doubles no event, and the read models equal a fresh replay', async () => {
        const env = testEnv(dir, NOW);
        const { child, done } = spawnCli(['seed'], env);
        if (phase === 'writing events') {
          await until(() => countRows(dir, 'SELECT count(*) AS n FROM events') > 0, 60_000);
        } else {
          await until(() => countRows(dir, 'SELECT count(*) AS n FROM projector_checkpoints') > 0, 60_000);
        }
        child.kill('SIGKILL');
        const killed = await done;
        expect(killed.signal).to.equal('SIGKILL');

        const again = await runCli(['seed'], env);
        expect(again.code, again.stderr).to.equal(0);
        expect(await dataEvents(dir)).to.deep.equal(expected);
        const models = await readModelsMatchReplay(dir);
        expect(models['latest_scores']!.length).to.be.greaterThan(500);
      });
    });
  }

  describe('When an ingest is killed mid-way, then run again', () => {
    const dir = tempDir();
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('writes the batch whole or not at all, and a rerun completes it exactly once', async () => {
      const env = testEnv(dir, NOW);
      expect((await runCli(['seed'], env)).code).to.equal(0);
      const before = (await dataEvents(dir)).length;
      // A large restatement: 200 tickers × every trading day of the period.
      const dataset = new DemoDataset({});
      const lines = ['ticker,date,main_street,wall_street'];
      for (const a of dataset.appendsBetween(null, new Date(NOW))) {
        for (const e of a.events) {
          if (e.type !== 'ScoresPublished') continue;
          const d = e.data as { date: string; rows: { ticker: string; main_street: number; wall_street: number }[] };
          for (const r of d.rows.slice(0, 200)) lines.push(`${r.ticker},${d.date},${(100 - r.main_street).toFixed(1)},${r.wall_street}`);
        }
      }
      const file = join(dir, 'restate.csv');
      writeFileSync(file, lines.join('\n'));

      const { child, done } = spawnCli(['ingest', file, '--json'], env);
      await new Promise((r) => setTimeout(r, 900));
      child.kill('SIGKILL');
      await done;
      const afterKill = (await dataEvents(dir)).length;
      const dates = new Set(lines.slice(1).map((l) => l.split(',')[1])).size;
      // One ScoresRestated per date, or nothing: never a part of the batch.
      expect([before, before + dates]).to.include(afterKill);

      const rerun = await runCli(['ingest', file, '--json'], env);
      expect(rerun.code, rerun.stderr).to.equal(0);
      expect((await dataEvents(dir)).length).to.equal(before + dates);
      const third = await runCli(['ingest', file, '--json'], env);
      expect(JSON.parse(third.stdout)).to.include({ written: 0, events: 0, unchanged: lines.length - 1 });
      await readModelsMatchReplay(dir);
    });
  });
});
