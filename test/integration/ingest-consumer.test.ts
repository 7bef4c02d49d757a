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

  describe('When the store fails for a moment', () => {
    it('tries the append again, ingests the row, and dead-letters nothing', async () => {
      const handlers: ((m: BusMessage) => Promise<void>)[] = [];
      const published: string[] = [];
      const fakeBus = {
        subscribe: async (s: { handler: (m: BusMessage) => Promise<void> }) => {
          handlers.push(s.handler);
          return { close: async () => undefined };
        },
        publish: async (topic: string) => void published.push(topic),
      } as unknown as InMemoryEventBus;
      let failures = 2;
      const flaky = new Proxy(services.events, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if ((prop !== 'append' && prop !== 'appendMany') || typeof value !== 'function') return value;
          return (...args: unknown[]) => (failures-- > 0 ? Promise.reject(new Error('connection terminated')) : (value as (...a: unknown[]) => unknown).apply(target, args));
        },
      });
      await startIngestConsumer({ bus: fakeBus, store: flaky, clock: services.clock });
      const message = { key: 'ACME', value: JSON.stringify({ type: 'score', ticker: 'ACME', date: '2024-02-28', main_street: 42, wall_street: 11 }) };
      await handlers[0]!(message);
      expect(failures, 'both failures seen').to.be.lessThan(0);
      expect(published, 'nothing dead-lettered').to.deep.equal([]);
      const day = JSON.stringify(await services.events.readStream(scoreStream('2024-02-28')));
      expect(day).to.include('ACME').and.to.include('42');
    });
  });
});
