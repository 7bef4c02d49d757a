import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { fixedClock } from '../../src/core/clock.js';
import type { Projection } from '../../src/core/projection.js';
import { ReadModelUnit } from '../../src/core/read-model-unit.js';
import { GenerationLog } from '../../src/core/read-model-generations.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { until } from '../support/processes.js';
import { tempDir } from '../support/server.js';

const ticks = defineCollection<{ id: string; n: number }>({ name: 'ticks', key: (d) => d.id, fields: [], indexes: [] });

/**
 * One read model's unit as a worker runs it under its lease (src/core/read-model-unit.ts): a
 * failed first catch-up must not leave it dead while its lease is held and renewed.
 */
describe('Read-model unit', () => {
  let dir: string;
  let dbs: SqliteDb[];
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let unit: ReadModelUnit | null;

  beforeEach(async () => {
    dir = tempDir('scores-unit-');
    dbs = [openSqlite(join(dir, 'scores.sqlite')), openSqlite(join(dir, 'scores.sqlite'))];
    events = new SqliteEventStore(dbs[0]!, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline', pollMs: 50 });
    reads = new SqliteReadStore(dbs[1]!);
    for (let i = 0; i < 5; i++) await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
    unit = null;
  });

  afterEach(async () => {
    await unit?.stop();
    await events.close();
    await reads.close();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = (projection: Projection) => {
    const log = new GenerationLog(events, fixedClock(new Date('2024-01-02T00:00:00Z')), 'read-model-generations-test');
    const errors: unknown[] = [];
    unit = new ReadModelUnit(events, reads, log, { name: 'ticks', projections: [projection] }, { owner: 'w1', pollMs: 20, onError: (err) => errors.push(err) });
    return { unit, errors };
  };

  it('starts its projector again after a first catch-up that failed, and projects the log', async () => {
    let failures = 1;
    const counter: Projection = {
      name: 'counter',
      collections: [ticks],
      eventTypes: ['Ticked'],
      async apply(_event, ctx) {
        if (failures-- > 0) throw new Error('the read store is away');
        const doc = (await ctx.get(ticks, 'all')) ?? { id: 'all', n: 0 };
        ctx.upsert(ticks, { id: 'all', n: doc.n + 1 });
      },
    };
    const { unit, errors } = open(counter);
    const started = await unit.start().then(() => null, (err: unknown) => err);
    expect(String(started)).to.contain('the read store is away');
    const head = (await events.headPosition())!;
    await until(async () => (await reads.checkpoint('counter')) === head, 5_000, 20);
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 5 });
    expect(errors.length).to.be.at.least(1);
  });
});
