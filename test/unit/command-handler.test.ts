import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { foldStream, handleCommand, type Folded } from '../../src/core/command-handler.js';
import { systemClock } from '../../src/core/clock.js';
import type { Decider } from '../../src/core/decider.js';
import { AppError, ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore, NewEvent } from '../../src/core/event-store.port.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { tempDir } from '../support/server.js';

const counted = (seen: number): NewEvent => ({ type: 'Counted', data: { seen } });

/**
 * The state is how many events the streams read hold; a decision records the count it saw on the
 * first stream, on each stream of `also` (at `expectedRevision` when given), or refuses.
 */
type Count = { also?: { streamId: string; expectedRevision?: 'any' }[]; refuse?: boolean };
const counter: Decider<number, Count, NewEvent, number> = {
  initialState: () => 0,
  evolve: (n) => n + 1,
  decide: (n, { also, refuse }) => {
    if (refuse) throw new AppError('conflict', 'no');
    if (!also) return [counted(n)];
    return { events: [counted(n)], writes: also.map((w) => ({ ...w, events: [counted(n)] })), result: n };
  },
};

describe('The command handler', () => {
  let dir: string;
  let db: ReturnType<typeof openSqlite>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir('scores-command-handler-');
    db = openSqlite(join(dir, 'events.db'));
    store = new SqliteEventStore(db, systemClock);
  });
  afterEach(async () => {
    await store.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Given: `count` events already in each stream, written by someone else. */
  const given = async (history: Record<string, number>) => {
    for (const [streamId, count] of Object.entries(history)) {
      for (let i = 0; i < count; i++) await store.append(streamId, [{ type: 'Other', data: { i } }]);
    }
  };
  /** Then: each stream's events, as `type:data`. */
  const streams = async (...ids: string[]): Promise<Record<string, string[]>> =>
    Object.fromEntries(
      await Promise.all(ids.map(async (id) => [id, (await store.readStream(id)).map((e) => `${e.type}:${JSON.stringify(e.data)}`)] as const)),
    );
  /** The store, where another writer appends to `history`'s streams just before each of the first `times` appends. */
  const racing = (history: Record<string, number>, times: number): EventStore & { decisions: number } => {
    const raced = Object.assign(Object.create(store) as EventStore, { decisions: 0 });
    raced.appendMany = async (appends) => {
      raced.decisions++;
      if (raced.decisions <= times) await given(history);
      return store.appendMany(appends);
    };
    return raced;
  };

  it('appends at the revision the decision was taken on, and at no_stream on an empty stream', async () => {
    await given({ a: 2 });
    const a = await handleCommand(store, counter, 'a', {}, systemClock);
    const b = await handleCommand(store, counter, 'b', {}, systemClock);
    expect(a.written.map((w) => [w.expectedRevision, w.nextExpectedRevision])).to.deep.equal([[1, 2]]);
    expect(b.written.map((w) => [w.expectedRevision, w.nextExpectedRevision])).to.deep.equal([['no_stream', 0]]);
    expect(a.events).to.deep.equal([counted(2)]);
    expect(a).to.include({ state: 3, revision: 2 });
    expect(await streams('a', 'b')).to.deep.equal({ a: ['Other:{"i":0}', 'Other:{"i":1}', 'Counted:{"seen":2}'], b: ['Counted:{"seen":0}'] });
  });

  it('writes nothing when the decision has no events', async () => {
    await given({ a: 1 });
    const out = await handleCommand(store, { ...counter, decide: () => [] }, 'a', {}, systemClock);
    expect(out.written).to.deep.equal([]);
    expect(out).to.include({ state: 1, revision: 0 });
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}'] });
  });

  it('decides again on the fresh state when another writer got there first', async () => {
    const raced = racing({ a: 1 }, 1);
    await handleCommand(raced, counter, 'a', {}, systemClock);
    expect(raced.decisions).to.equal(2);
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}', 'Counted:{"seen":1}'] });
  });

  it('gives up after the bound with the conflict', async () => {
    const raced = racing({ a: 1 }, 3);
    const err = await handleCommand(raced, counter, 'a', {}, systemClock, { attempts: 3 }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ConcurrencyError);
    expect(raced.decisions).to.equal(3);
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}', 'Other:{"i":0}', 'Other:{"i":0}'] });
  });

  it('does not retry a refusal', async () => {
    const err = await handleCommand(store, counter, 'a', { refuse: true }, systemClock).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(AppError);
    expect(await streams('a')).to.deep.equal({ a: [] });
  });

  describe('with several streams', () => {
    it('appends all of them in one go, each at the revision it was read at', async () => {
      await given({ b: 1 });
      const out = await handleCommand(store, counter, ['a', 'b'], { also: [{ streamId: 'b' }] }, systemClock);
      expect(out.result).to.equal(1);
      expect(out.written.map((w) => [w.streamId, w.expectedRevision])).to.deep.equal([['a', 'no_stream'], ['b', 0]]);
      expect(await streams('a', 'b')).to.deep.equal({ a: ['Counted:{"seen":1}'], b: ['Other:{"i":0}', 'Counted:{"seen":1}'] });
    });

    it('writes none of them when one conflicts, and decides all of them again', async () => {
      const refused = await handleCommand(racing({ b: 1 }, 1), counter, ['a', 'b'], { also: [{ streamId: 'b' }] }, systemClock, { attempts: 1 }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(ConcurrencyError);
      expect(await streams('a')).to.deep.equal({ a: [] });

      await handleCommand(racing({ b: 1 }, 1), counter, ['a', 'b'], { also: [{ streamId: 'b' }] }, systemClock);
      expect(await streams('a', 'b')).to.deep.equal({
        a: ['Counted:{"seen":2}'],
        b: ['Other:{"i":0}', 'Other:{"i":0}', 'Counted:{"seen":2}'],
      });
    });

    it('appends a stream it did not read at the revision the decision gives', async () => {
      await given({ c: 2 });
      const out = await handleCommand(store, counter, ['a'], { also: [{ streamId: 'c', expectedRevision: 'any' }] }, systemClock);
      expect(out.written.map((w) => [w.streamId, w.expectedRevision])).to.deep.equal([['a', 'no_stream'], ['c', 'any']]);
    });
  });

  it('takes the state from `load` when given, and asks it for a fresh one after a conflict', async () => {
    await given({ a: 1 });
    const asked: boolean[] = [];
    // A cache that missed the last event: its first decision is on a stale revision.
    let cached: Folded<number> = { state: 0, revision: -1, position: null };
    const source = { streamId: 'a', load: async (fresh: boolean) => (asked.push(fresh), fresh ? (cached = await foldStream(store, counter, 'a', cached)) : cached) };
    const out = await handleCommand(store, counter, source, {}, systemClock);
    expect(asked).to.deep.equal([false, true]);
    expect(out.written[0]).to.include({ expectedRevision: 0, nextExpectedRevision: 1 });
    expect(cached).to.include({ state: 1, revision: 0 });
  });
});
