import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore, NewEvent, RecordedEvent, Subscription } from '../../src/core/event-store.port.js';

export interface EventStoreFixture {
  store: EventStore;
  cleanup(): Promise<void>;
  /** The log starts empty for every test (not a shared server). Checks that need it are pending otherwise. */
  isolated?: boolean;
  /** `appendMany` is all-or-nothing across streams (the embedded store promises it, engines do not). */
  atomicAppendMany?: boolean;
  /** A second, independent handle on the same log, as another process would open (closed by cleanup). */
  another?(): Promise<EventStore>;
}

/**
 * One behaviour spec for every EventStore adapter. Streams carry a per-test suffix and reads of
 * the whole log start at the head seen before the test, so the spec also runs on a shared server.
 */
export function eventStoreContract(name: string, make: () => Promise<EventStoreFixture>): void {
  describe(`EventStore contract: ${name}`, function () {
    let fixture: EventStoreFixture;
    let store: EventStore;
    let run: string;

    beforeEach(async function () {
      fixture = await make();
      store = fixture.store;
      run = randomUUID().slice(0, 8);
    });

    afterEach(async function () {
      await fixture.cleanup();
    });

    const stream = (label: string) => `${label}-${run}`;
    const mine = (events: RecordedEvent[]) => events.filter((e) => e.streamId.endsWith(`-${run}`));
    const event = (type: string, data: unknown = {}, extra: Partial<NewEvent> = {}): NewEvent => ({ type, data, ...extra });

    describe('When events are appended to a new stream', function () {
      it('reads them back in order, with revisions from 0 and their type, data and metadata', async function () {
        const s = stream('account');
        const data = { ticker: 'AAPL', score: 71.5, estimated: false, note: null, tags: ['a', 'ü'], nested: { n: 1 } };
        await store.append(s, [
          event('AccountOpened', data, { metadata: { correlationId: 'c-1' } }),
          event('KeyCreated', { key: 'k1' }),
        ]);

        const read = await store.readStream(s);

        expect(read.map((e) => [e.streamId, e.revision, e.type])).to.deep.equal([
          [s, 0, 'AccountOpened'],
          [s, 1, 'KeyCreated'],
        ]);
        expect(read[0]!.data).to.deep.equal(data);
        expect(read[0]!.metadata).to.deep.include({ correlationId: 'c-1' });
        expect(read[1]!.metadata).to.be.an('object');
      });

      it('answers with the next expected revision and the position of the last event', async function () {
        const s = stream('account');
        const result = await store.append(s, [event('A'), event('B'), event('C')], 'no_stream');

        const read = await store.readStream(s);

        expect(result.nextExpectedRevision).to.equal(2);
        expect(result.position).to.equal(read[2]!.position);
        const single = await store.append(s, [event('D')], 2);
        expect(single.nextExpectedRevision).to.equal(3);
        expect(single.position).to.equal((await store.readStream(s))[3]!.position);
      });

      it('keeps the id a writer chose and gives one to events without', async function () {
        const s = stream('account');
        const chosen = randomUUID();
        await store.append(s, [event('A', {}, { id: chosen }), event('B')]);

        const [a, b] = await store.readStream(s);

        expect(a!.id).to.equal(chosen);
        expect(b!.id).to.be.a('string').and.not.equal('').and.not.equal(chosen);
      });

      it('stamps each event with the instant the store recorded it', async function () {
        const before = Date.now();
        await store.append(stream('account'), [event('A')]);
        const [e] = await store.readStream(stream('account'));

        const at = Date.parse(e!.recordedAt);
        expect(new Date(at).toISOString()).to.equal(e!.recordedAt);
        // Server clocks may differ a little from ours.
        expect(Math.abs(at - before)).to.be.below(5 * 60_000);
      });
    });

    describe('When a stream does not exist', function () {
      it('reads as empty', async function () {
        expect(await store.readStream(stream('nothing'))).to.deep.equal([]);
      });
    });

    describe('When reading part of a stream', function () {
      it('starts at fromRevision and stops after maxCount', async function () {
        const s = stream('history');
        await store.append(s, ['A', 'B', 'C', 'D', 'E'].map((t) => event(t)));

        const part = await store.readStream(s, { fromRevision: 1, maxCount: 3 });

        expect(part.map((e) => [e.revision, e.type])).to.deep.equal([
          [1, 'B'],
          [2, 'C'],
          [3, 'D'],
        ]);
      });
    });

    describe('When the expected revision is stale', function () {
      it('refuses with a concurrency error and writes nothing', async function () {
        const s = stream('ledger');
        await store.append(s, [event('A'), event('B')]);

        const err = await failureOf(store.append(s, [event('C'), event('D')], 0));

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).streamId).to.equal(s);
        expect((err as ConcurrencyError).actual).to.equal(1);
        expect((await store.readStream(s)).map((e) => e.type)).to.deep.equal(['A', 'B']);
      });

      it('refuses a revision beyond the stream\'s last event, and writes nothing (no gap)', async function () {
        const s = stream('ledger');
        await store.append(s, [event('A'), event('B')]);

        const err = await failureOf(store.append(s, [event('C')], 5));

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).actual).to.equal(1);
        expect((await store.readStream(s)).map((e) => [e.type, e.revision])).to.deep.equal([
          ['A', 0],
          ['B', 1],
        ]);
      });

      it('refuses a numeric revision on a stream that does not exist', async function () {
        const s = stream('ledger');
        const err = await failureOf(store.append(s, [event('A')], 0));

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).actual).to.equal(null);
        expect(await store.readStream(s)).to.deep.equal([]);
      });
    });

    describe('When the expected revision matches', function () {
      it('appends after the last event', async function () {
        const s = stream('ledger');
        const first = await store.append(s, [event('A')]);
        const second = await store.append(s, [event('B')], first.nextExpectedRevision);

        expect(second.nextExpectedRevision).to.equal(1);
        expect((await store.readStream(s)).map((e) => e.type)).to.deep.equal(['A', 'B']);
      });
    });

    describe('When the stream must not exist yet (no_stream)', function () {
      it('creates it', async function () {
        const s = stream('key');
        await store.append(s, [event('KeyCreated')], 'no_stream');
        expect(await store.readStream(s)).to.have.length(1);
      });

      it('refuses when it exists, writing nothing', async function () {
        const s = stream('key');
        await store.append(s, [event('KeyCreated')], 'no_stream');

        const err = await failureOf(store.append(s, [event('KeyCreated')], 'no_stream'));

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).actual).to.equal(0);
        expect(await store.readStream(s)).to.have.length(1);
      });
    });

    describe('When the stream must exist (stream_exists)', function () {
      it('refuses when it does not, writing nothing', async function () {
        const s = stream('key');
        const err = await failureOf(store.append(s, [event('KeyRevoked')], 'stream_exists'));

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).actual).to.equal(null);
        expect(await store.readStream(s)).to.deep.equal([]);
      });

      it('appends when it does', async function () {
        const s = stream('key');
        await store.append(s, [event('KeyCreated')]);
        const result = await store.append(s, [event('KeyRevoked')], 'stream_exists');

        expect(result.nextExpectedRevision).to.equal(1);
      });
    });

    describe('When any revision is accepted', function () {
      it('appends to new and existing streams alike', async function () {
        const s = stream('usage');
        await store.append(s, [event('A')], 'any');
        await store.append(s, [event('B')], 'any');
        await store.append(s, [event('C')]);

        expect((await store.readStream(s)).map((e) => e.revision)).to.deep.equal([0, 1, 2]);
      });
    });

    describe('When several streams are appended at once', function () {
      it('appends each, in order, with one result per stream', async function () {
        const head = await store.headPosition();
        const [a, b] = [stream('a'), stream('b')];
        await store.append(b, [event('B0')]);

        const results = await store.appendMany([
          { streamId: a, events: [event('A0'), event('A1')], expectedRevision: 'no_stream' },
          { streamId: b, events: [event('B1')], expectedRevision: 0 },
        ]);

        expect(results.map((r) => r.nextExpectedRevision)).to.deep.equal([1, 1]);
        expect(results[0]!.position < results[1]!.position).to.equal(true);
        const log = mine(await store.readAll({ after: head }));
        expect(log.map((e) => e.type)).to.deep.equal(['B0', 'A0', 'A1', 'B1']);
      });

      it('writes nothing when one stream refuses, where the store is atomic across streams', async function () {
        if (!fixture.atomicAppendMany) this.skip();
        const [a, b] = [stream('a'), stream('b')];
        await store.append(b, [event('B0'), event('B1')]);

        const err = await failureOf(
          store.appendMany([
            { streamId: a, events: [event('A0')] },
            { streamId: b, events: [event('B2')], expectedRevision: 0 },
          ]),
        );

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect(await store.readStream(a)).to.deep.equal([]);
        expect(await store.readStream(b)).to.have.length(2);
      });
    });

    describe('When an append without events is a condition on its stream', function () {
      it('writes the other streams while the checked stream is still at its revision, and leaves it as it was', async function () {
        const [job, lease] = [stream('job'), stream('lease')];
        await store.append(lease, [event('LeaseAcquired'), event('LeaseRenewed')]);

        const results = await store.appendMany([
          { streamId: job, events: [event('J0')], expectedRevision: 'no_stream' },
          { streamId: lease, events: [], expectedRevision: 1 },
        ]);

        expect(results.map((r) => r.nextExpectedRevision)).to.deep.equal([0, 1]);
        expect((await store.readStream(job)).map((e) => e.type)).to.deep.equal(['J0']);
        expect((await store.readStream(lease)).map((e) => e.type)).to.deep.equal(['LeaseAcquired', 'LeaseRenewed']);
      });

      it('holds on a stream that must not exist yet while it does not', async function () {
        const [job, lease] = [stream('job'), stream('lease')];

        const results = await store.appendMany([
          { streamId: lease, events: [], expectedRevision: 'no_stream' },
          { streamId: job, events: [event('J0')] },
        ]);

        expect(results[0]!.nextExpectedRevision).to.equal(-1);
        expect(await store.readStream(job)).to.have.length(1);
        expect(await store.readStream(lease)).to.deep.equal([]);
      });

      it('writes nothing once the checked stream has moved on, and says which stream moved', async function () {
        const [job, lease] = [stream('job'), stream('lease')];
        await store.append(lease, [event('LeaseAcquired'), event('LeaseAcquired')]);

        const err = await failureOf(
          store.appendMany([
            { streamId: job, events: [event('J0')] },
            { streamId: lease, events: [], expectedRevision: 0 },
          ]),
        );

        expect(err).to.be.instanceOf(ConcurrencyError);
        expect((err as ConcurrencyError).streamId).to.equal(lease);
        expect(await store.readStream(job)).to.deep.equal([]);
        expect(await store.readStream(lease)).to.have.length(2);
      });

      it('lets no append to the checked stream from another process commit between the check and the write', async function () {
        if (!fixture.atomicAppendMany || !fixture.another) this.skip();
        const other = await fixture.another();
        for (let round = 0; round < 30; round++) {
          const [job, lease] = [stream(`job${round}`), stream(`lease${round}`)];
          await store.append(lease, [event('LeaseAcquired')]);

          const [fenced, moved] = await Promise.allSettled([
            store.appendMany([
              { streamId: job, events: [event('J0')] },
              { streamId: lease, events: [], expectedRevision: 0 },
            ]),
            other.append(lease, [event('LeaseAcquired')], 0),
          ]);

          expect(moved.status, `round ${round}: the other process's append`).to.equal('fulfilled');
          if (fenced.status === 'rejected') {
            expect(fenced.reason).to.be.instanceOf(ConcurrencyError);
            expect(await store.readStream(job)).to.deep.equal([]);
          } else {
            // Written under the condition, so before the lease moved: earlier in the log.
            const [jobEvent] = await store.readStream(job);
            const [, takeover] = await store.readStream(lease);
            expect(jobEvent!.position < takeover!.position, `round ${round}: the fenced write comes before the lease moved`).to.equal(true);
          }
        }
      });
    });

    describe('When reading the whole log', function () {
      it('returns events in append order across streams, positions increasing as strings', async function () {
        const head = await store.headPosition();
        await store.append(stream('x'), [event('X0')]);
        await store.append(stream('y'), [event('Y0'), event('Y1')]);
        await store.append(stream('x'), [event('X1')]);

        const log = mine(await store.readAll({ after: head }));

        expect(log.map((e) => e.type)).to.deep.equal(['X0', 'Y0', 'Y1', 'X1']);
        const positions = log.map((e) => e.position);
        for (let i = 1; i < positions.length; i++) expect(positions[i - 1]! < positions[i]!).to.equal(true);
        expect([...positions].sort()).to.deep.equal(positions);
      });

      it('starts strictly after the given position', async function () {
        const head = await store.headPosition();
        await store.append(stream('x'), ['E0', 'E1', 'E2', 'E3'].map((t) => event(t)));
        const all = mine(await store.readAll({ after: head }));

        const rest = mine(await store.readAll({ after: all[1]!.position }));

        expect(rest.map((e) => e.type)).to.deep.equal(['E2', 'E3']);
      });

      it('returns at most maxCount events, and continues from the last one', async function () {
        const head = await store.headPosition();
        await store.append(stream('x'), ['E0', 'E1', 'E2', 'E3', 'E4'].map((t) => event(t)));

        const page1 = await store.readAll({ after: head, maxCount: 2 });
        const page2 = await store.readAll({ after: page1[1]!.position, maxCount: 2 });

        expect(page1.map((e) => e.type)).to.deep.equal(['E0', 'E1']);
        expect(page2.map((e) => e.type)).to.deep.equal(['E2', 'E3']);
      });

      it('reads from the beginning when no position is given', async function () {
        if (!fixture.isolated) this.skip();
        await store.append(stream('x'), [event('E0'), event('E1')]);

        expect((await store.readAll()).map((e) => e.type)).to.deep.equal(['E0', 'E1']);
        expect(await store.readAll({ after: null })).to.have.length(2);
      });

      it('is empty after the head', async function () {
        await store.append(stream('x'), [event('E0')]);
        const head = await store.headPosition();

        expect(mine(await store.readAll({ after: head }))).to.deep.equal([]);
      });
    });

    describe('When asking for the head of the log', function () {
      it('is null while the log is empty', async function () {
        if (!fixture.isolated) this.skip();
        expect(await store.headPosition()).to.equal(null);
      });

      it('is the position of the last event appended', async function () {
        await store.append(stream('x'), [event('E0')]);
        const last = await store.append(stream('y'), [event('E1'), event('E2')]);

        expect(await store.headPosition()).to.equal(last.position);
      });
    });

    describe('When subscribed to the whole log', function () {
      let subscription: Subscription | null;
      afterEach(async function () {
        await subscription?.stop();
        subscription = null;
      });

      it('catches up with what exists, says so once, then delivers new appends live', async function () {
        const head = await store.headPosition();
        await store.append(stream('x'), [event('E0'), event('E1'), event('E2')]);
        const seen: RecordedEvent[] = [];
        const caughtUpAfter: number[] = [];
        const errors: unknown[] = [];

        subscription = store.subscribeToAll({
          after: head,
          maxBatch: 2,
          onEvents: async (batch) => {
            seen.push(...mine(batch));
          },
          onCaughtUp: () => caughtUpAfter.push(seen.length),
          onError: (err) => errors.push(err),
        });
        await waitUntil(() => caughtUpAfter.length > 0);
        await store.append(stream('x'), [event('E3')]);
        await store.append(stream('y'), [event('E4')]);
        await waitUntil(() => seen.length >= 5);

        expect(caughtUpAfter).to.deep.equal([3]);
        expect(seen.map((e) => e.type)).to.deep.equal(['E0', 'E1', 'E2', 'E3', 'E4']);
        expect(errors).to.deep.equal([]);
      });

      it('says it caught up at once when there is nothing to catch up with', async function () {
        await store.append(stream('x'), [event('E0')]);
        const head = await store.headPosition();
        let caughtUp = 0;

        subscription = store.subscribeToAll({ after: head, onEvents: async () => undefined, onCaughtUp: () => (caughtUp += 1) });

        await waitUntil(() => caughtUp > 0);
        expect(caughtUp).to.equal(1);
      });

      it('hands over one batch at a time, in log order, at most maxBatch events each', async function () {
        const head = await store.headPosition();
        await store.append(stream('x'), Array.from({ length: 7 }, (_, i) => event(`E${i}`)));
        const seen: RecordedEvent[] = [];
        const sizes: number[] = [];
        let running = 0;
        let overlapped = false;

        subscription = store.subscribeToAll({
          after: head,
          maxBatch: 3,
          onEvents: async (batch) => {
            running += 1;
            if (running > 1) overlapped = true;
            sizes.push(batch.length);
            await sleep(5);
            seen.push(...mine(batch));
            running -= 1;
          },
        });
        await store.append(stream('x'), [event('E7'), event('E8')]);
        await waitUntil(() => seen.length >= 9);

        expect(overlapped).to.equal(false);
        expect(Math.max(...sizes)).to.be.at.most(3);
        expect(seen.map((e) => e.type)).to.deep.equal(['E0', 'E1', 'E2', 'E3', 'E4', 'E5', 'E6', 'E7', 'E8']);
        const positions = seen.map((e) => e.position);
        expect([...new Set(positions)]).to.have.length(9);
        expect([...positions].sort()).to.deep.equal(positions);
      });

      it('delivers nothing more once stop() has resolved', async function () {
        const head = await store.headPosition();
        const seen: RecordedEvent[] = [];
        const errors: unknown[] = [];
        const sub = store.subscribeToAll({
          after: head,
          onEvents: async (batch) => {
            seen.push(...mine(batch));
          },
          onError: (err) => errors.push(err),
        });
        await store.append(stream('x'), [event('E0')]);
        await waitUntil(() => seen.length === 1);

        await sub.stop();
        await store.append(stream('x'), [event('E1')]);
        await witnessed(store, head, stream('x'), 'E1');

        expect(seen.map((e) => e.type)).to.deep.equal(['E0']);
        expect(errors).to.deep.equal([]);
        await sub.stop(); // stopping twice is harmless
      });

      it('follows appends made through another handle on the same log (another process)', async function () {
        if (!fixture.another) this.skip();
        const other = await fixture.another();
        const head = await store.headPosition();
        const seen: RecordedEvent[] = [];
        let caughtUp = false;
        subscription = store.subscribeToAll({
          after: head,
          onEvents: async (batch) => {
            seen.push(...mine(batch));
          },
          onCaughtUp: () => (caughtUp = true),
        });
        await waitUntil(() => caughtUp);

        await other.append(stream('cli'), [event('KeyCreated')]);
        // That it comes, not how soon (a figure for a bench, not for a shared machine's test).
        await waitUntil(() => seen.length === 1, 60_000);

        expect(seen[0]!.type).to.equal('KeyCreated');
      });

      it('reports a handler failure through onError and stops', async function () {
        const head = await store.headPosition();
        const failure = new Error('projection broke');
        const errors: unknown[] = [];
        let calls = 0;
        subscription = store.subscribeToAll({
          after: head,
          onEvents: async (batch) => {
            if (mine(batch).length === 0) return;
            calls += 1;
            throw failure;
          },
          onError: (err) => errors.push(err),
        });
        await store.append(stream('x'), [event('E0')]);
        await waitUntil(() => errors.length > 0);
        await store.append(stream('x'), [event('E1')]);
        await witnessed(store, head, stream('x'), 'E1');

        expect(errors).to.deep.equal([failure]);
        expect(calls).to.equal(1);
      });
    });

    describe('When writers race on the same stream with the same expected revision', function () {
      it('lets exactly one win; the others get a concurrency error', async function () {
        const s = stream('credits');
        const opened = await store.append(s, [event('LedgerOpened')]);

        const outcomes = await Promise.allSettled(
          Array.from({ length: 5 }, (_, i) => store.append(s, [event('CreditsDebited', { n: i })], opened.nextExpectedRevision)),
        );

        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(won).to.have.length(1);
        expect(lost).to.have.length(4);
        for (const o of lost) expect(o.reason).to.be.instanceOf(ConcurrencyError);
        expect(await store.readStream(s)).to.have.length(2);
      });
    });
  });
}

async function failureOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure, but it succeeded');
}

/**
 * Resolves once a subscription of its own from `after` has been handed `type` on `streamId`: the store has
 * delivered it, so a subscription that should not get it (stopped, or failed) has had its chance
 * to, without a guess at how long delivery takes.
 */
async function witnessed(store: EventStore, after: string | null, streamId: string, type: string): Promise<void> {
  let seen = false;
  const witness = store.subscribeToAll({
    after,
    onEvents: async (batch) => {
      if (batch.some((e) => e.streamId === streamId && e.type === type)) seen = true;
    },
  });
  try {
    await waitUntil(() => seen, 60_000);
  } finally {
    await witness.stop();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}
