import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { BusMessage, BusSubscription, EventBus } from '../../src/core/event-bus.port.js';
import { LeaseLostError } from '../../src/core/lease.js';

export interface EventBusFixture {
  bus: EventBus;
  cleanup(): Promise<void>;
}

export interface EventBusHooks {
  /** Pass to the adapter as its handler-error reporter. */
  onError(err: unknown): void;
}

export interface EventBusContractOptions {
  /** How long a delivery may take before the spec gives up (a broker needs seconds). */
  deliveryMs?: number;
  /** How long the spec waits to be sure that something is NOT delivered. */
  quietMs?: number;
}

/**
 * One behaviour spec for every EventBus adapter. Each test uses its own topics and groups, so
 * the spec also runs on a shared broker.
 */
export function eventBusContract(
  name: string,
  make: (hooks: EventBusHooks) => Promise<EventBusFixture>,
  options: EventBusContractOptions = {},
): void {
  const deliveryMs = options.deliveryMs ?? 2_000;
  const quietMs = options.quietMs ?? 100;

  describe(`EventBus contract: ${name}`, function () {
    let fixture: EventBusFixture;
    let bus: EventBus;
    let errors: unknown[];
    let run: string;
    let subscriptions: BusSubscription[];

    beforeEach(async function () {
      errors = [];
      subscriptions = [];
      run = randomUUID().slice(0, 8);
      fixture = await make({ onError: (err) => errors.push(err) });
      bus = fixture.bus;
    });

    afterEach(async function () {
      for (const s of subscriptions) await s.stop();
      await fixture.cleanup();
    });

    const topic = (label: string) => `contract.${label}.${run}`;
    const group = (label: string) => `contract-${label}-${run}`;
    const subscribe = async (t: string, g: string, handler: (m: BusMessage) => Promise<void>, fromBeginning = true) => {
      const s = await bus.subscribe({ topic: t, group: g, fromBeginning, handler });
      subscriptions.push(s);
      return s;
    };
    const collect = (into: BusMessage[]) => async (m: BusMessage) => {
      into.push(m);
    };
    const messages = (n: number, key: (i: number) => string | null = (i) => `k${i}`) =>
      Array.from({ length: n }, (_, i): BusMessage => ({ key: key(i), value: JSON.stringify({ i }) }));
    const indexOf = (m: BusMessage) => (JSON.parse(m.value) as { i: number }).i;
    const until = (condition: () => boolean) => waitUntil(condition, deliveryMs);

    describe('When a message is published to a topic a group follows', function () {
      it('delivers its key, value and headers', async function () {
        const t = topic('scores');
        const got: BusMessage[] = [];
        await subscribe(t, group('g'), collect(got));

        await bus.publish(t, [
          { key: 'AAPL', value: '{"score":71}', headers: { 'event-id': 'e-1', 'content-type': 'application/json' } },
          { key: null, value: 'plain' },
        ]);
        await until(() => got.length === 2);

        const byValue = new Map(got.map((m) => [m.value, m]));
        expect(byValue.get('{"score":71}')).to.deep.equal({
          key: 'AAPL',
          value: '{"score":71}',
          headers: { 'event-id': 'e-1', 'content-type': 'application/json' },
        });
        expect(byValue.get('plain')!.key).to.equal(null);
      });
    });

    describe('When two groups follow the same topic', function () {
      it('gives each group every message', async function () {
        const t = topic('scores');
        const a: BusMessage[] = [];
        const b: BusMessage[] = [];
        await subscribe(t, group('webhooks'), collect(a));
        await subscribe(t, group('alerts'), collect(b));

        await bus.publish(t, messages(10));
        await until(() => a.length === 10 && b.length === 10);
        await sleep(quietMs);

        expect(a.map(indexOf).sort((x, y) => x - y)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(b.map(indexOf).sort((x, y) => x - y)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });
    });

    describe('When one group has two members', function () {
      it('shares the messages between them, each handled once', async function () {
        const t = topic('deliveries');
        const g = group('dispatchers');
        const one: BusMessage[] = [];
        const two: BusMessage[] = [];
        const slow = (into: BusMessage[]) => async (m: BusMessage) => {
          into.push(m);
          await sleep(2);
        };
        await subscribe(t, g, slow(one));
        await subscribe(t, g, slow(two));

        await bus.publish(t, messages(30));
        await until(() => one.length + two.length >= 30);
        await sleep(quietMs);

        const all = [...one, ...two].map(indexOf).sort((x, y) => x - y);
        expect(all).to.deep.equal(Array.from({ length: 30 }, (_, i) => i));
        expect(one.length, 'first member').to.be.above(0);
        expect(two.length, 'second member').to.be.above(0);
      });

      it('gives the remaining member what the stopped one would have had', async function () {
        const t = topic('deliveries');
        const g = group('dispatchers');
        const one: BusMessage[] = [];
        const two: BusMessage[] = [];
        const first = await subscribe(t, g, collect(one));
        await subscribe(t, g, collect(two));

        await first.stop();
        await bus.publish(t, messages(10));
        await until(() => two.length === 10);
        await sleep(quietMs);

        expect(one).to.deep.equal([]);
      });
    });

    describe('When messages share a key', function () {
      it('hands them over in publication order, one after the other, even across members', async function () {
        const t = topic('ledger');
        const g = group('projector');
        const seen = new Map<string, number[]>();
        const running = new Set<string>();
        let overlapped = false;
        const handler = async (m: BusMessage) => {
          const key = m.key!;
          if (running.has(key)) overlapped = true;
          running.add(key);
          // Every fourth message is slow, so the other member runs ahead to the same key.
          await sleep(indexOf(m) % 4 === 0 ? 8 : 0);
          seen.set(key, [...(seen.get(key) ?? []), indexOf(m)]);
          running.delete(key);
        };
        await subscribe(t, g, handler);
        await subscribe(t, g, handler);

        const keys = ['acct-1', 'acct-2', 'acct-3'];
        const batch = messages(45, (i) => keys[i % 3]!);
        await bus.publish(t, batch.slice(0, 20));
        await bus.publish(t, batch.slice(20));
        await until(() => [...seen.values()].reduce((n, v) => n + v.length, 0) === 45);

        expect(overlapped).to.equal(false);
        for (const [k, order] of seen) {
          expect(order, k).to.deep.equal([...order].sort((x, y) => x - y));
          expect(order, k).to.have.length(15);
        }
      });
    });

    describe('When a handler fails', function () {
      it('reports the error and hands the message again until it succeeds, later messages of its key waiting', async function () {
        const t = topic('ingest');
        const got: number[] = [];
        const failure = new Error('store did not answer');
        let failures = 2;
        await subscribe(t, group('ingest'), async (m) => {
          if (indexOf(m) === 1 && failures-- > 0) throw failure;
          got.push(indexOf(m));
        });

        await bus.publish(t, messages(5, () => 'same-key'));
        await until(() => got.length === 5);
        await sleep(quietMs);

        expect(got).to.deep.equal([0, 1, 2, 3, 4]);
        expect(errors).to.deep.equal([failure, failure]);
      });

      it('gives a message its member never handled to the next member of the group once that one stops', async function () {
        const t = topic('leased');
        const g = group('leased');
        const lost = new Error('lease lost');
        let tries = 0;
        const first = await subscribe(t, g, async () => {
          tries++;
          throw lost;
        });
        await bus.publish(t, [{ key: 'k', value: 'stuck' }]);
        await until(() => tries >= 2);

        await first.stop();
        const next: string[] = [];
        await subscribe(t, g, async (m) => void next.push(m.value));
        await bus.publish(t, [{ key: 'k', value: 'after' }]);
        await until(() => next.length === 2);
        await sleep(quietMs);

        expect(next).to.deep.equal(['stuck', 'after']);
        expect(errors.every((e) => e === lost)).to.equal(true);
      });

      it("does not run a handler again once its job lost the lease, and gives the message to the group's next member once that one stops", async function () {
        const t = topic('lost');
        const g = group('lost');
        const lost = new LeaseLostError('webhooks', 'worker-a');
        let tries = 0;
        const first = await subscribe(t, g, async () => {
          tries++;
          throw lost;
        });
        await bus.publish(t, [{ key: 'k', value: 'stuck' }]);
        await until(() => tries > 0);
        // Past the pauses after which a failed handler runs again (0.1, 0.2, 0.4 s).
        await sleep(Math.max(quietMs, 1_000));
        expect(tries, 'runs of the handler whose lease was lost').to.equal(1);

        await first.stop();
        const next: string[] = [];
        await subscribe(t, g, async (m) => void next.push(m.value));
        await bus.publish(t, [{ key: 'k', value: 'after' }]);
        await until(() => next.length === 2);
        await sleep(quietMs);

        expect(next).to.deep.equal(['stuck', 'after']);
        expect(tries).to.equal(1);
        expect(errors).to.deep.equal([lost]);
      });
    });

    describe('When a group subscribes after messages were published', function () {
      it('skips them unless it asks to start from the beginning', async function () {
        const t = topic('audit');
        await bus.publish(t, [{ key: 'a', value: 'early' }]);
        const late: BusMessage[] = [];
        const replaying: BusMessage[] = [];
        await subscribe(t, group('late'), collect(late), false);
        await subscribe(t, group('replaying'), collect(replaying), true);

        await bus.publish(t, [{ key: 'a', value: 'later' }]);
        await until(() => late.length === 1 && replaying.length === 2);
        await sleep(quietMs);

        expect(late.map((m) => m.value)).to.deep.equal(['later']);
        expect(replaying.map((m) => m.value)).to.deep.equal(['early', 'later']);
      });
    });

    describe('When a subscription stops', function () {
      it('waits for its running handler and then receives nothing', async function () {
        const t = topic('exports');
        const got: string[] = [];
        let finished = false;
        const s = await subscribe(t, group('exports'), async (m) => {
          got.push(m.value);
          if (m.value === 'slow') {
            await sleep(150);
            finished = true;
          }
        });
        await bus.publish(t, [{ key: 'x', value: 'slow' }]);
        await until(() => got.length === 1);

        await s.stop();
        expect(finished).to.equal(true);
        await bus.publish(t, [{ key: 'x', value: 'after stop' }]);
        await sleep(quietMs);

        expect(got).to.deep.equal(['slow']);
      });
    });

    describe('When the bus closes', function () {
      it('waits for running handlers first', async function () {
        const t = topic('close');
        let started = false;
        let finished = false;
        await subscribe(t, group('g'), async () => {
          started = true;
          await sleep(150);
          finished = true;
        });
        await bus.publish(t, [{ key: 'x', value: 'v' }]);
        await until(() => started);

        await bus.close();

        expect(finished).to.equal(true);
        subscriptions = [];
      });
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}
