import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { INGEST_DLQ_TOPIC, INGEST_TOPIC, startIngestConsumer } from '../../commands/ingest/ingest.reactor.js';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import type { BusMessage } from '../../src/core/event-bus.port.js';
import { scoreStream } from '../../src/domain/scores/score.events.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

describe('Ingest consumer on the bus', () => {
  let dir: string;
  let services: Services;
  let bus: InMemoryEventBus;
  const dead: BusMessage[] = [];

  before(async () => {
    dir = tempDir();
    services = await openServices(loadConfig(testEnv(dir, '2024-03-01T12:00:00Z', { SCORES_DEMO: 'off' })));
    await services.runner.start();
    bus = new InMemoryEventBus({});
    await bus.subscribe({ topic: INGEST_DLQ_TOPIC, group: 'test', fromBeginning: true, handler: async (m) => void dead.push(m) });
    await startIngestConsumer({ bus, store: services.events, clock: services.clock });
  });
  after(async () => {
    await bus.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('When a bad message arrives between good ones', () => {
    it('dead-letters it with the reason and ingests the rest', async () => {
      const msg = (value: unknown) => ({ key: null, value: typeof value === 'string' ? value : JSON.stringify(value) });
      await bus.publish(INGEST_TOPIC, [
        msg({ type: 'ticker', symbol: 'ACME', company: 'Acme', sector: 'Industrials', size_rank: 1 }),
        msg('{not json'),
        msg({ type: 'score', ticker: 'ACME', date: '2024-02-29', main_street: 150, wall_street: 10 }),
        msg({ type: 'score', ticker: 'GHOST', date: '2024-02-29', main_street: 50, wall_street: 10 }),
        msg({ type: 'score', ticker: 'ACME', date: '2024-02-29', main_street: 60, wall_street: 10 }),
      ]);
      await until(async () => (await services.reads.get(latestScores, 'ACME')) !== null && dead.length === 3, 5000);
      expect(dead.map((d) => d.headers?.['reason'])).to.satisfy((reasons: string[]) =>
        /not valid JSON/.test(reasons[0]!) && /main_street/.test(reasons[1]!) && /GHOST is not listed/.test(reasons[2]!),
      );
      expect(JSON.parse(dead[1]!.value)).to.have.property('message');
      expect(await services.reads.get(latestScores, 'ACME')).to.include({ main_street: 60, wall_street: 10 });
    });
  });

  /** The store of the services, whose appends throw `failure` while `failing()` says so. */
  const failingAppends = (failing: () => boolean, failure: () => Error) =>
    new Proxy(services.events, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if ((prop !== 'append' && prop !== 'appendMany') || typeof value !== 'function') return value;
        return (...args: unknown[]) => (failing() ? Promise.reject(failure()) : (value as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
  const scoreMessage = (date: string, main: number) => ({ key: 'ACME', value: JSON.stringify({ type: 'score', ticker: 'ACME', date, main_street: main, wall_street: 11 }) });
  const dayHas = async (date: string, text: string) => JSON.stringify(await services.events.readStream(scoreStream(date))).includes(text);

  describe('When the store fails for a moment', () => {
    it('gets the message again from the bus, ingests the row, and dead-letters nothing', async () => {
      const errors: unknown[] = [];
      const own = new InMemoryEventBus({ onError: (err) => errors.push(err) });
      const deadHere: BusMessage[] = [];
      await own.subscribe({ topic: INGEST_DLQ_TOPIC, group: 'test', fromBeginning: true, handler: async (m) => void deadHere.push(m) });
      let failures = 2;
      await startIngestConsumer({ bus: own, store: failingAppends(() => failures-- > 0, () => new Error('connection terminated')), clock: services.clock });
      await own.publish(INGEST_TOPIC, [scoreMessage('2024-02-28', 42)]);
      await until(() => dayHas('2024-02-28', '42'), 10_000);
      await own.close();
      expect(errors.map((e) => (e as Error).message)).to.deep.equal(['connection terminated', 'connection terminated']);
      expect(deadHere, 'nothing dead-lettered').to.deep.equal([]);
    });
  });

  describe("When the job's lease is lost while a row fails to append", () => {
    it("leaves the row to the job's next owner, which ingests it; nothing is dead-lettered", async () => {
      const own = new InMemoryEventBus({ onError: () => undefined });
      const deadHere: BusMessage[] = [];
      await own.subscribe({ topic: INGEST_DLQ_TOPIC, group: 'test', fromBeginning: true, handler: async (m) => void deadHere.push(m) });
      let tries = 0;
      // The first owner's every append is refused, as a fenced write after another owner took the lease.
      const lostOwner = await startIngestConsumer({ bus: own, store: failingAppends(() => ++tries > 0, () => new Error('job lease ingest lost')), clock: services.clock });
      await own.publish(INGEST_TOPIC, [scoreMessage('2024-02-27', 37)]);
      // Longer than the five tries (0.2-1.6 s apart) after which the row used to be dead-lettered.
      await until(() => tries >= 6, 20_000);
      await lostOwner.stop();
      await startIngestConsumer({ bus: own, store: services.events, clock: services.clock });
      await until(() => dayHas('2024-02-27', '37'), 10_000);
      await own.close();
      expect(deadHere, 'nothing dead-lettered').to.deep.equal([]);
    });
  });
});
