import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { foldStream, handleCommand, type Folded, type Stream } from '../../src/core/command-handler.js';
import { systemClock } from '../../src/core/clock.js';
import { AppError, ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore, NewEvent } from '../../src/core/event-store.port.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { tempDir } from '../support/server.js';

/** A stream whose state is how many events it holds; a decision records the count it saw. */
const counter = (streamId: string): Stream<number> => ({ streamId, initialState: () => 0, evolve: (n) => n + 1 });
const counted = (seen: number): NewEvent => ({ type: 'Counted', data: { seen } });

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

  it('appends at the revision the decision was taken on, and at no_stream on an empty stream', async () => {
    await given({ a: 2 });
    const a = await handleCommand(store, counter('a'), (n) => [counted(n)]);
    const b = await handleCommand(store, counter('b'), (n) => [counted(n)]);
    expect(a.written.map((w) => [w.expectedRevision, w.nextExpectedRevision])).to.deep.equal([[1, 2]]);
    expect(b.written.map((w) => [w.expectedRevision, w.nextExpectedRevision])).to.deep.equal([['no_stream', 0]]);
    expect(a.result).to.deep.equal([counted(2)]);
    expect(await streams('a', 'b')).to.deep.equal({ a: ['Other:{"i":0}', 'Other:{"i":1}', 'Counted:{"seen":2}'], b: ['Counted:{"seen":0}'] });
  });

  it('writes nothing when the decision has no events', async () => {
    await given({ a: 1 });
    const out = await handleCommand(store, counter('a'), () => []);
    expect(out.written).to.deep.equal([]);
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}'] });
  });

  it('decides again on the fresh state when another writer got there first', async () => {
    const seen: number[] = [];
    await handleCommand(store, counter('a'), async (n) => {
      seen.push(n);
      if (seen.length === 1) await given({ a: 1 });
      return [counted(n)];
    });
    expect(seen).to.deep.equal([0, 1]);
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}', 'Counted:{"seen":1}'] });
  });

  it('gives up after the bound with the conflict', async () => {
    let decisions = 0;
    const err = await handleCommand(
      store,
      counter('a'),
      async (n) => {
        decisions++;
        await given({ a: 1 });
        return [counted(n)];
      },
      { attempts: 3 },
    ).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ConcurrencyError);
    expect(decisions).to.equal(3);
    expect(await streams('a')).to.deep.equal({ a: ['Other:{"i":0}', 'Other:{"i":0}', 'Other:{"i":0}'] });
  });

  it('does not retry a refusal', async () => {
    let decisions = 0;
    const err = await handleCommand(store, counter('a'), () => {
      decisions++;
      throw new AppError('conflict', 'no');
    }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(AppError);
    expect(decisions).to.equal(1);
    expect(await streams('a')).to.deep.equal({ a: [] });
  });

  describe('with several streams', () => {
    const both = (interfere: () => Promise<void>) => async ([a, b]: readonly [number, number]) => {
      await interfere();
      return { writes: [{ streamId: 'a', events: [counted(a)] }, { streamId: 'b', events: [counted(b)] }], result: a + b };
    };

    it('appends all of them in one go, each at its own revision', async () => {
      await given({ b: 1 });
      const out = await handleCommand(store, [counter('a'), counter('b')], both(async () => undefined));
      expect(out.result).to.equal(1);
      expect(out.written.map((w) => [w.streamId, w.expectedRevision])).to.deep.equal([['a', 'no_stream'], ['b', 0]]);
      expect(await streams('a', 'b')).to.deep.equal({ a: ['Counted:{"seen":0}'], b: ['Other:{"i":0}', 'Counted:{"seen":1}'] });
    });

    it('writes none of them when one conflicts, and decides all of them again', async () => {
      let attempt = 0;
      const interfereOnce = async () => {
        if (++attempt === 1) await given({ b: 1 });
      };
      const refused = await handleCommand(store, [counter('a'), counter('b')], both(interfereOnce), { attempts: 1 }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(ConcurrencyError);
      expect(await streams('a')).to.deep.equal({ a: [] });

      attempt = 0;
      await handleCommand(store, [counter('a'), counter('b')], both(interfereOnce));
      expect(await streams('a', 'b')).to.deep.equal({
        a: ['Counted:{"seen":0}'],
        b: ['Other:{"i":0}', 'Other:{"i":0}', 'Counted:{"seen":2}'],
      });
    });

    it('appends a stream it did not fold at the revision the decision gives', async () => {
      await given({ c: 2 });
      const out = await handleCommand(store, [counter('a')], ([a]) => ({
        writes: [{ streamId: 'a', events: [counted(a)] }, { streamId: 'c', events: [counted(-1)], expectedRevision: 'any' }],
        result: null,
      }));
      expect(out.written.map((w) => [w.streamId, w.expectedRevision])).to.deep.equal([['a', 'no_stream'], ['c', 'any']]);
    });
  });

  it('takes the state from `load` when given, and asks it for a fresh one after a conflict', async () => {
    await given({ a: 1 });
    const asked: boolean[] = [];
    // A cache that missed the last event: its first decision is on a stale revision.
    let cached: Folded<number> = { state: 0, revision: -1, position: null };
    const stream = { ...counter('a'), load: async (fresh: boolean) => (asked.push(fresh), fresh ? (cached = await foldStream(store, counter('a'), cached)) : cached) };
    const out = await handleCommand(store, stream, (n) => [counted(n)]);
    expect(asked).to.deep.equal([false, true]);
    expect(out.written[0]).to.include({ expectedRevision: 0, nextExpectedRevision: 1 });
    expect(cached).to.include({ state: 1, revision: 0 });
  });
});
