import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { ReadModelFollower } from '../../src/app/read-model-follower.js';
import { fixedClock } from '../../src/core/clock.js';
import type { Projection } from '../../src/core/projection.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { tempDir } from '../support/server.js';

const ticks = defineCollection<{ id: string; n: number }>({ name: 'ticks', key: (d) => d.id, fields: [], indexes: [] });
const counter: Projection = {
  name: 'counter',
  collections: [ticks],
  eventTypes: ['Ticked'],
  async apply(_event, ctx) {
    const doc = (await ctx.get(ticks, 'all')) ?? { id: 'all', n: 0 };
    ctx.upsert(ticks, { id: 'all', n: doc.n + 1 });
  },
};

/**
 * A process that reads without projecting (`scores serve --role api`): the follower hands a batch
 * on only once the projecting process has committed it, so a cache dropped on it reads the new data.
 */
describe('The read-model follower of a process that does not project', () => {
  let dir: string;
  let dbs: SqliteDb[];
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let runner: ProjectorRunner;
  let follower: ReadModelFollower;

  beforeEach(async () => {
    dir = tempDir('scores-follower-');
    dbs = [openSqlite(join(dir, 'scores.sqlite')), openSqlite(join(dir, 'scores.sqlite'))];
    events = new SqliteEventStore(dbs[0]!, fixedClock(new Date('2024-01-02T00:00:00Z')), { writer: 'inline', pollMs: 20 });
    reads = new SqliteReadStore(dbs[1]!);
    runner = new ProjectorRunner(events, reads, [counter]);
    follower = new ReadModelFollower(events, reads, { projections: ['counter'], pollMs: 5 });
  });

  afterEach(async () => {
    await follower.stop();
    await runner.stop();
    await events.close();
    await reads.close();
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands a batch on only once the projector committed it, and resolves waitFor then', async () => {
    await runner.start();
    await runner.stop(); // the projecting process pauses: nothing new reaches the read models
    await follower.start();
    expect(follower.health.state).to.equal('live');
    const seen: Promise<number>[] = [];
    // What a cache dropped on the batch would read next.
    follower.onBatch(() => seen.push(reads.get(ticks, 'all').then((d) => d?.n ?? 0)));

    const { position } = await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
    let reached = false;
    const waited = follower.waitFor(position).then(() => (reached = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(reached, 'handed on before the projector committed').to.equal(false);
    expect(seen).to.have.length(0);

    await runner.start();
    await waited;
    expect(follower.position).to.equal(position);
    expect(await Promise.all(seen)).to.deep.equal([1]);
  });

  it('resolves a waitFor made before it starts, for a position the read models already hold', async () => {
    const { position } = await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
    await runner.start();
    await runner.waitFor(position);
    // As `scores serve --role api` does: the position first, then the follower, with nothing new to follow.
    const waited = follower.waitFor(position);
    await follower.start();
    await waited;
    expect(follower.position).to.equal(position);
  });

  /** The log, recording the types whose data each subscription made on it asks for. */
  function recordingSubscriptions() {
    const asked: (readonly string[] | undefined)[] = [];
    const subscribe = events.subscribeToAll.bind(events);
    const log = Object.assign(Object.create(events) as SqliteEventStore, {
      subscribeToAll: (options: Parameters<SqliteEventStore['subscribeToAll']>[0]) => (asked.push(options.dataTypes), subscribe(options)),
    });
    return { log, asked };
  }

  it('asks the log for its listeners\' types only, and for more once a job wants them, without handing a batch on twice', async () => {
    await runner.start();
    const { log, asked } = recordingSubscriptions();
    const follower = new ReadModelFollower(log, reads, { projections: ['counter'], pollMs: 5, dataTypes: ['ApiKeyRevoked'] });
    try {
      await follower.start();
      const handed: string[] = [];
      follower.onBatch((batch) => handed.push(...batch.map((e) => e.position)));
      const first = await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
      await follower.waitFor(first.position);

      await follower.wantData(['ApiKeyRevoked']); // already read: nothing changes
      expect(asked).to.deep.equal([['ApiKeyRevoked']]);
      await follower.wantData(['ScoresPublished', 'ScoresRestated']);
      expect(asked).to.deep.equal([['ApiKeyRevoked'], ['ApiKeyRevoked', 'ScoresPublished', 'ScoresRestated']]);

      const second = await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
      await follower.waitFor(second.position);
      expect(handed).to.deep.equal([first.position, second.position]);
    } finally {
      await follower.stop();
    }
  });

  it('asks for the new types also while it is still catching up, and its start still resolves', async () => {
    const { log, asked } = recordingSubscriptions();
    const catchingUp = new ReadModelFollower(log, reads, { projections: ['counter'], pollMs: 5, dataTypes: ['ApiKeyRevoked'] });
    try {
      const { position } = await events.append('ticker-1', [{ type: 'Ticked', data: {} }]);
      // Nothing projected yet: the follower holds its first batch until the projector commits it.
      const starting = catchingUp.start();
      while (asked.length === 0) await new Promise((r) => setTimeout(r, 5));
      const wanting = catchingUp.wantData(['ScoresPublished']);
      await runner.start();
      await wanting;
      await starting;
      expect(asked).to.deep.equal([['ApiKeyRevoked'], ['ApiKeyRevoked', 'ScoresPublished']]);
      await catchingUp.waitFor(position);
    } finally {
      await catchingUp.stop();
    }
  });
});
