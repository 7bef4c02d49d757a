import { expect } from 'chai';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { fixedClock } from '../../src/core/clock.js';
import type { Projection } from '../../src/core/projection.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { defineCollection, type ReadStore } from '../../src/core/read-store.port.js';

interface Day {
  id: string;
  seen: number;
  tags: string[];
}
const days = defineCollection<Day>({ name: 'days', key: (d) => d.id, fields: [], indexes: [] });
const totals = defineCollection<{ id: string; n: number }>({ name: 'totals', key: (d) => d.id, fields: [], indexes: [] });

/** The store's reads, counted by collection and id. */
function counting(store: ReadStore): { store: ReadStore; asked: Map<string, number> } {
  const asked = new Map<string, number>();
  const count = (collection: string, id: string) => asked.set(`${collection}/${id}`, (asked.get(`${collection}/${id}`) ?? 0) + 1);
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'get') return (def: { name: string }, id: string) => (count(def.name, id), target.get(def as never, id));
      if (prop === 'getMany') return (def: { name: string }, ids: string[]) => (ids.forEach((id) => count(def.name, id)), target.getMany(def as never, ids));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { store: wrapped, asked };
}

/**
 * Each event names a day; the projection reads the day (absent on a rebuild: the day is new) and
 * a total it changes in memory without writing it back (as a projection may), then writes the day.
 */
const perDay: Projection = {
  name: 'per-day',
  // `totals` is another read model's: read here, never written (so not reset by a rebuild of this one).
  collections: [days],
  eventTypes: ['Seen'],
  async apply(event, ctx) {
    const { day, other } = event.data as { day: string; other: string };
    await ctx.get(days, other); // asked for, never written
    const total = await ctx.get(totals, 'all');
    if (total) total.n += 1000; // changed, not written back: the next read must not see it
    const doc = (await ctx.get(days, day)) ?? { id: day, seen: 0, tags: [] };
    ctx.upsert(days, { ...doc, seen: doc.seen + 1, tags: [...doc.tags, `t${total?.n ?? 0}`] });
  },
};

describe('Projector runner reads within a batch (a rebuild on a server: a round trip per read)', () => {
  let db: SqliteDb;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;

  beforeEach(async () => {
    db = openSqlite(':memory:');
    events = new SqliteEventStore(db, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline', pollMs: 600_000 });
    reads = new SqliteReadStore(db);
    await reads.register([days, totals]);
    await reads.commit({ writes: [{ op: 'upsert', collection: 'totals', id: 'all', doc: { id: 'all', n: 1 } }], checkpoints: {} });
    const seen = Array.from({ length: 30 }, (_, i) => ({ type: 'Seen', data: { day: `d${i % 3}`, other: `missing-${i % 2}` } }));
    await events.append('days-1', seen);
  });

  afterEach(async () => {
    await events.close();
    await reads.close();
    db.close();
  });

  it('asks the store once a batch for a document, held or not, and a changed copy never leaks into the next read', async () => {
    const { store, asked } = counting(reads);
    const runner = new ProjectorRunner(events, store, [perDay], { batchSize: 1000 });
    await runner.start();
    await runner.stop();

    // One batch of 30 events: each document the store was asked for, once.
    expect(Object.fromEntries(asked)).to.deep.equal({ 'days/missing-0': 1, 'days/missing-1': 1, 'totals/all': 1, 'days/d0': 1, 'days/d1': 1, 'days/d2': 1 });
    // Every event read the stored total (1), not one changed by an earlier event of the batch.
    const d0 = await reads.get(days, 'd0');
    expect(d0).to.deep.equal({ id: 'd0', seen: 10, tags: Array.from({ length: 10 }, () => 't1001') });
    expect(await reads.get(totals, 'all')).to.deep.equal({ id: 'all', n: 1 });
  });

  it('asks again in the next batch: what it knew of the store lasts one batch', async () => {
    const { store, asked } = counting(reads);
    const runner = new ProjectorRunner(events, store, [perDay], { batchSize: 10 });
    await runner.start();
    await runner.stop();

    expect(asked.get('days/missing-0')).to.equal(3);
    expect(asked.get('totals/all')).to.equal(3);
    expect((await reads.get(days, 'd1'))!.seen).to.equal(10);
  });
});
