import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { systemClock } from '../../src/core/clock.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2019-03-29T23:00:00Z';

async function withServices<T>(dir: string, f: (s: Services) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig(testEnv(dir, NOW)));
  try {
    return await f(services);
  } finally {
    await services.close();
  }
}

async function allEvents(services: Services): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const batch = await services.events.readAll({ after, maxCount: 1000 });
    if (!batch.length) return out;
    out.push(...batch);
    after = batch[batch.length - 1]!.position;
  }
}

function rawData(db: SqliteDb, type: string): string {
  return (db.prepare('SELECT data FROM events WHERE type = ? ORDER BY position LIMIT 1').get(type) as { data: string }).data;
}

describe('The log encoding on the embedded store', function () {
  this.timeout(120_000);
  const encoded = tempDir('scores-encoding-');
  const mixed = tempDir('scores-encoding-');
  let events: RecordedEvent[] = [];
  let readModels: Record<string, unknown[]> = {};

  before(async () => {
    await withServices(encoded, async (s) => {
      await seedIfEmpty(s, { progress: false });
      await catchUpReadModels(s, { progress: false });
      events = await allEvents(s);
      readModels = await snapshotReadModels(s);
    });
    // The same log, written as stores did before the encoding (rows) up to its middle publication, encoded after it.
    const db = openSqlite(join(mixed, 'scores.sqlite'));
    const publications = events.flatMap((e, i) => (e.type === 'ScoresPublished' ? [i] : []));
    const half = publications[Math.floor(publications.length / 2)]!;
    for (const [from, to, codec] of [[0, half, undefined], [half, events.length, logEncoding]] as const) {
      const store = new SqliteEventStore(db, systemClock, { writer: 'inline', codec });
      for (const e of events.slice(from, to)) {
        await store.appendMany([{ streamId: e.streamId, expectedRevision: 'any', events: [{ id: e.id, type: e.type, data: e.data, metadata: e.metadata }] }]);
      }
      await store.close();
    }
    db.close();
  });

  after(() => {
    rmSync(encoded, { recursive: true, force: true });
    rmSync(mixed, { recursive: true, force: true });
  });

  it('stores a day of scores, prices and visits as tables in the file', () => {
    const db = openSqlite(join(encoded, 'scores.sqlite'), { readonly: true });
    try {
      for (const [type, rows] of [['ScoresPublished', 'rows'], ['ClosePricesRecorded', 'closes'], ['WebVisitsRecorded', 'visits']]) {
        const data = JSON.parse(rawData(db, type!)) as Record<string, unknown>;
        expect(data, type).to.have.property('table');
        expect(data, type).to.not.have.property(rows!);
        expect((data['table'] as { ticker: string[] }).ticker).to.include('AAPL');
      }
    } finally {
      db.close();
    }
  });

  it('stores what an ingest writes as tables too', async () => {
    const csv = [
      'ticker,date,main_street,wall_street',
      'AAPL,2019-04-01,61.5,48.2',
      'MSFT,2019-04-01,55.0,57.3',
      'AAPL,2019-03-29,12.0,13.0',
      'MSFT,2019-03-29,14.0,15.0',
    ].join('\n');
    const prices = ['ticker,date,close', 'AAPL,2019-04-01,191.24', 'MSFT,2019-04-01,119.02'].join('\n');
    await withServices(encoded, async (s) => {
      await ingestRows(s.events, s.clock, parseIngestFile(csv, 'csv', 'score'));
      await ingestRows(s.events, s.clock, parseIngestFile(prices, 'csv', 'price'));
    });
    const db = openSqlite(join(encoded, 'scores.sqlite'), { readonly: true });
    try {
      const written = db.prepare('SELECT type, data FROM events ORDER BY position DESC LIMIT 3').all() as { type: string; data: string }[];
      expect(written.map((w) => w.type).sort()).to.deep.equal(['ClosePricesRecorded', 'ScoresPublished', 'ScoresRestated']);
      for (const w of written) expect(JSON.parse(w.data), w.type).to.have.property('table');
    } finally {
      db.close();
    }
  });

  it('gives readers the rows back', () => {
    const day = events.find((e) => e.type === 'ScoresPublished')!.data as { rows: { ticker: string; estimated: boolean }[] };
    expect(day.rows.length).to.be.greaterThan(500);
    expect(Object.keys(day.rows[0]!)).to.deep.equal(['ticker', 'main_street', 'wall_street', 'service_score', 'estimated']);
    const closes = events.find((e) => e.type === 'ClosePricesRecorded')!.data as { closes: { ticker: string; close: number }[] };
    expect(closes.closes.find((c) => c.ticker === 'AAPL')?.close).to.be.a('number');
  });

  it('reads a log written partly before the encoding into the same events and the same read models', async () => {
    const db = openSqlite(join(mixed, 'scores.sqlite'), { readonly: true });
    try {
      expect(JSON.parse(rawData(db, 'ScoresPublished'))).to.have.property('rows');
      const last = (db.prepare("SELECT data FROM events WHERE type = 'ScoresPublished' ORDER BY position DESC LIMIT 1").get() as { data: string }).data;
      expect(JSON.parse(last)).to.have.property('table');
    } finally {
      db.close();
    }
    await withServices(mixed, async (s) => {
      const read = await allEvents(s);
      expect(read.map((e) => [e.id, e.type, e.data])).to.deep.equal(events.map((e) => [e.id, e.type, e.data]));
      await catchUpReadModels(s, { progress: false });
      expect(await snapshotReadModels(s)).to.deep.equal(readModels);
    });
  });
});
