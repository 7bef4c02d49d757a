import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { rowsBetween, scoreHistory, scoreVersions } from '../../projections/score-history/score-history.projection.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { tempDir, testEnv } from '../support/server.js';

describe('Projector runner', () => {
  let dir: string;
  let services: Services;

  before(async () => {
    dir = tempDir();
    services = await openServices(loadConfig(testEnv(dir, '2019-03-15T12:00:00Z')));
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    // A live restatement on top of the demo's own.
    const rows = parseIngestFile(['ticker,date,main_street,wall_street', 'AAPL,2019-03-01,12.5,87.5'].join('\n'), 'csv');
    const r = await ingestRows(services.events, services.clock, rows);
    await services.runner.waitFor(r.position!);
  });

  after(async () => {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('When every read model is rebuilt with replay', () => {
    it('gives exactly the read models the live run built', async () => {
      const live = await snapshotReadModels(services);
      expect(live['score_history']!.length).to.be.greaterThan(1_000);
      expect(live['score_versions']!.length).to.be.greaterThan(0);
      await services.runner.replay();
      const rebuilt = await snapshotReadModels(services);
      expect(rebuilt).to.deep.equal(live);
    });
  });

  describe('When the demo restates rows after publication', () => {
    it('reports restated_at later than the publication and keeps the superseded value', async () => {
      const touched = await services.reads.find(scoreHistory, { written_at: { $gt: '2019-03-02' } });
      const old = rowsBetween(touched.items).filter((r) => r.restated_at !== r.published_at);
      expect(old.length).to.be.greaterThan(0);
      for (const r of old) {
        expect(r.restated_at > r.published_at).to.equal(true);
        const versions = await services.reads.find(scoreVersions, { ticker: r.ticker, date: r.date });
        expect(versions.items.length).to.equal(r.version - 1);
        expect(versions.items[versions.items.length - 1]!.valid_to).to.equal(r.restated_at);
      }
    });
  });

  describe('When the CLI ingest file is applied to the store', () => {
    it('records the live restatement with the ingest time', async () => {
      const bucket = await services.reads.get(scoreHistory, 'AAPL|2019-03');
      const [aapl] = rowsBetween([bucket!], '2019-03-01', '2019-03-01');
      expect(aapl).to.include({ main_street: 12.5, wall_street: 87.5, divergence_gap: -75, restated_at: '2019-03-15T12:00:00.000Z' });
    });
  });
});
