import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { IngestStreams, ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { scoreStream } from '../../src/domain/scores/score.events.js';
import { tempDir, testEnv } from '../support/server.js';

describe('Ingest with its streams kept between batches', () => {
  let dir: string;
  let services: Services;
  const rows = (...lines: string[]) => parseIngestFile(['ticker,date,main_street,wall_street', ...lines].join('\n'), 'csv');

  before(async () => {
    dir = tempDir();
    services = await openServices(loadConfig(testEnv(dir, '2024-03-01T12:00:00Z', { SCORES_DEMO: 'off' })));
    await ingestRows(services.events, services.clock, parseIngestFile('{"type":"ticker","symbol":"ACME","company":"Acme","sector":"Industrials","size_rank":1}', 'jsonl'));
  });
  after(async () => {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('When another writer changed a stream after this one folded it', () => {
    it('decides on what the stream holds now, reading only what was appended since', async () => {
      const reads: number[] = [];
      const counting = new Proxy(services.events, {
        get: (t, p, r) => (p === 'readStream' ? (id: string, o?: { fromRevision?: number }) => (reads.push(o?.fromRevision ?? 0), t.readStream(id, o)) : (Reflect.get(t, p, r) as unknown)),
      });
      const kept = new IngestStreams(counting);
      expect(await ingestRows(counting, services.clock, rows('ACME,2024-02-29,50,10'), kept)).to.include({ written: 1 });
      // Another process restates the row; the kept values still say 50.
      expect(await ingestRows(services.events, services.clock, rows('ACME,2024-02-29,60,10'))).to.include({ written: 1 });
      reads.length = 0;
      expect(await ingestRows(counting, services.clock, rows('ACME,2024-02-29,50,10'), kept)).to.include({ written: 1, unchanged: 0 });
      expect(reads, 'the date read from the revision after the one kept; the listings not read again').to.deep.equal([1]);
      const held = (await services.events.readStream(scoreStream('2024-02-29'))).map((e) => (e.data as { rows: { main_street: number }[] }).rows[0]!.main_street);
      expect(held).to.deep.equal([50, 60, 50]);
    });
  });
});
