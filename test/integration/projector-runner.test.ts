import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { fixedClock } from '../../src/core/clock.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection } from '../../src/core/projection.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { until } from '../support/processes.js';
import { tempDir } from '../support/server.js';

const ticks = defineCollection<{ id: string; n: number }>({ name: 'ticks', key: (d) => d.id, fields: [], indexes: [] });

/** Counts `Ticked` events in one document. */
const counter: Projection = {
  name: 'counter',
  collections: [ticks],
  eventTypes: ['Ticked'],
  async apply(_event, ctx) {
    const doc = (await ctx.get(ticks, 'all')) ?? { id: 'all', n: 0 };
    ctx.upsert(ticks, { id: 'all', n: doc.n + 1 });
  },
};

describe('Projector runner, live', () => {
  let dir: string;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let dbs: SqliteDb[];
  let runner: ProjectorRunner;
  let batches: number[];
  let nextBatch: Promise<readonly RecordedEvent[]>;

  const tick = () => events.append('ticker-1', [{ type: 'Ticked', data: {} }]);

  async function start(liveCoalesceMs: number): Promise<void> {
    runner = new ProjectorRunner(events, reads, [counter], { liveCoalesceMs });
    batches = [];
    let resolveNext!: (batch: readonly RecordedEvent[]) => void;
    const arm = () => {
      nextBatch = new Promise((resolve) => (resolveNext = resolve));
    };
    arm();
    runner.onBatch((batch) => {
      batches.push(batch.length);
      const resolve = resolveNext;
      arm();
      resolve(batch);
    });
    await runner.start();
  }

  beforeEach(() => {
    dir = tempDir('scores-runner-');
    dbs = [openSqlite(join(dir, 'scores.sqlite')), openSqlite(join(dir, 'scores.sqlite'), { synchronous: 'NORMAL' })];
    // No polling: every read of the runner must come from a wake-up by a commit of this store.
    events = new SqliteEventStore(dbs[0]!, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline', pollMs: 600_000 });
    reads = new SqliteReadStore(dbs[1]!);
  });

  afterEach(async () => {
    await runner.stop();
    await events.close();
    await reads.close();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies the first live event at once, and gathers the events of a burst into one batch', async () => {
    await start(1000);
    await tick();
    expect(await nextBatch).to.have.length(1);
    // The runner now lets events gather for up to a second: three commits become one batch.
    const burst = nextBatch;
    await tick();
    await tick();
    await tick();
    expect(await burst).to.have.length(3);
    expect(batches).to.deep.equal([1, 3]);
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 4 });
  });

  it('ends the gathering at once for a caller waiting for its write (read-your-writes)', async () => {
    // Ten minutes of gathering: were waitFor not to cut it short, this test would time out.
    await start(600_000);
    await tick();
    await nextBatch;
    const { position } = await tick();
    await runner.waitFor(position);
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 2 });
  });

  it('stops without waiting for the gathering to end', async () => {
    await start(600_000);
    await tick();
    await nextBatch;
    await runner.stop();
  });

  it('follows the log again after a batch fails once live, and reports it meanwhile', async () => {
    let failNext = true;
    const flaky: Projection = {
      ...counter,
      name: 'flaky',
      collections: [],
      apply() {
        if (failNext) {
          failNext = false;
          throw new Error('disk full');
        }
      },
    };
    const errors: string[] = [];
    runner = new ProjectorRunner(events, reads, [counter, flaky], { liveCoalesceMs: 0, onError: (err) => errors.push((err as Error).message) });
    await runner.start();
    expect(runner.health).to.deep.equal({ state: 'live', error: null });
    const { position } = await tick();
    // The failed batch committed nothing; after a one-second pause the runner reads it again.
    await until(() => errors.length > 0, 5000);
    expect(errors).to.deep.equal(['disk full']);
    expect(runner.health).to.deep.equal({ state: 'retrying', error: 'disk full' });
    expect(await reads.get(ticks, 'all')).to.equal(null);
    await runner.waitFor(position);
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 1 });
    expect(runner.health).to.deep.equal({ state: 'live', error: null });
  });

  it('fails start() when catching up fails', async () => {
    await tick();
    const broken: Projection = { ...counter, name: 'broken', collections: [], apply: () => Promise.reject(new Error('bad data')) };
    runner = new ProjectorRunner(events, reads, [broken]);
    let failure: unknown = null;
    await runner.start().catch((err: unknown) => (failure = err));
    expect((failure as Error | null)?.message).to.equal('bad data');
  });

  it('does not wait between full batches while catching up', async () => {
    for (let i = 0; i < 5; i++) await tick();
    runner = new ProjectorRunner(events, reads, [counter], { batchSize: 2, liveCoalesceMs: 600_000 });
    await runner.start();
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 5 });
  });
});

describe('Projector runner, when a projection is renamed (its documents changed shape)', () => {
  /** Version `v` of a projection of `Noted` events: its own document ids, and a field column of its own. */
  const notesOf = (v: number) => defineCollection<Record<string, unknown>>({ name: 'notes', key: (d) => d['id'] as string, fields: [`v${v}`], indexes: [] });
  const notesProjection = (v: number): Projection => ({
    name: `notes-v${v}`,
    collections: [notesOf(v)],
    eventTypes: ['Noted'],
    apply(event, ctx) {
      ctx.upsert(notesOf(v), { id: `v${v}-${(event.data as { n: number }).n}`, [`v${v}`]: true });
    },
  });

  it('rebuilds its collections from the start, in tables of the new shape, without the old documents', async () => {
    const dir = tempDir('scores-runner-');
    const file = join(dir, 'scores.sqlite');
    const logDb = openSqlite(file);
    const events = new SqliteEventStore(logDb, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline' });
    try {
      await events.append('notes', [1, 2].map((n) => ({ type: 'Noted', data: { n } })));
      // Each version runs in a process of its own: a store of its own on the same file.
      for (const v of [1, 2]) {
        const db = openSqlite(file, { synchronous: 'NORMAL' });
        const reads = new SqliteReadStore(db);
        try {
          const runner = new ProjectorRunner(events, reads, [notesProjection(v)]);
          await runner.start();
          await runner.stop();
          const ids = (await reads.find(notesOf(v), {})).items.map((d) => d['id']);
          expect(ids, `v${v}`).to.deep.equal([`v${v}-1`, `v${v}-2`]);
          expect(await reads.count(notesOf(v), { [`v${v}`]: true }), `v${v}`).to.equal(2);
        } finally {
          await reads.close();
          db.close();
        }
      }
    } finally {
      await events.close();
      logDb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Projector runner, between batches', () => {
  let dir: string;
  let dbs: SqliteDb[];
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  /** `get` / `getMany` calls that reached the store, by collection. */
  let storeReads: Map<string, number>;

  beforeEach(() => {
    dir = tempDir('scores-runner-');
    dbs = [openSqlite(join(dir, 'scores.sqlite')), openSqlite(join(dir, 'scores.sqlite'), { synchronous: 'NORMAL' })];
    events = new SqliteEventStore(dbs[0]!, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline' });
    reads = new SqliteReadStore(dbs[1]!);
    storeReads = new Map();
    const count = (name: string) => storeReads.set(name, (storeReads.get(name) ?? 0) + 1);
    const get = reads.get.bind(reads);
    const getMany = reads.getMany.bind(reads);
    reads.get = (def, id) => (count(def.name), get(def, id));
    reads.getMany = (def, ids) => (count(def.name), getMany(def, ids));
  });

  afterEach(async () => {
    await events.close();
    await reads.close();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the documents the previous batch wrote from memory, not from the store', async () => {
    for (let i = 0; i < 6; i++) await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
    const runner = new ProjectorRunner(events, reads, [counter], { batchSize: 2 });
    await runner.start();
    await runner.stop();
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 6 });
    // Three batches: only the first looked for the document in the store.
    expect(storeReads.get('ticks')).to.equal(2); // the first batch's read, and the check above
  });

  it('does not let the next read see a change a projection made to a document without writing it', async () => {
    // `Peeked` changes the document it reads and does not write it back.
    const peeking: Projection = {
      ...counter,
      eventTypes: ['Ticked', 'Peeked'],
      async apply(event, ctx) {
        const doc = (await ctx.get(ticks, 'all')) ?? { id: 'all', n: 0 };
        if (event.type === 'Peeked') doc.n = -100;
        else ctx.upsert(ticks, { id: 'all', n: doc.n + 1 });
      },
    };
    // Batches [Ticked, Ticked] and [Peeked, Ticked]: the second batch's reads find the first's document in memory.
    for (const type of ['Ticked', 'Ticked', 'Peeked', 'Ticked']) await events.append('ticker-1', [{ type, data: {} }]);
    const runner = new ProjectorRunner(events, reads, [peeking], { batchSize: 2 });
    await runner.start();
    await runner.stop();
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 3 });
  });

  it('gives the retry of a failed batch the stored document, not the one the failed attempt changed', async () => {
    let fail = true;
    // The first `Boom` changes the document it read (from memory), then fails.
    const failing: Projection = {
      ...counter,
      eventTypes: ['Ticked', 'Boom'],
      async apply(event, ctx) {
        const doc = (await ctx.get(ticks, 'all')) ?? { id: 'all', n: 0 };
        if (event.type === 'Boom' && fail) {
          fail = false;
          doc.n = 1000;
          throw new Error('boom');
        }
        ctx.upsert(ticks, { id: 'all', n: doc.n + 1 });
      },
    };
    await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
    const runner = new ProjectorRunner(events, reads, [failing], { liveCoalesceMs: 0 });
    await runner.start();
    const { position } = await events.append('ticker-1', [{ type: 'Boom', data: {} }, { type: 'Ticked', data: {} }]);
    // Retried after a one-second pause.
    await runner.waitFor(position);
    await runner.stop();
    expect(await reads.get(ticks, 'all')).to.deep.equal({ id: 'all', n: 3 });
  });
});
