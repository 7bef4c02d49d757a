import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import type { BusMessage, EventBus, SubscribeBusOptions } from '../../src/core/event-bus.port.js';
import { eventBusContract } from './event-bus.contract.js';

describe('In-memory adapter', function () {
  eventBusContract('in-memory', async (hooks) => {
    const bus = new InMemoryEventBus({ onError: (err) => hooks.onError(err) });
    return { bus, cleanup: () => bus.close() };
  });
});

describe('Kafka adapter', function () {
  const brokers = process.env['KAFKA_BROKERS'];
  if (!brokers) {
    it('runs when KAFKA_BROKERS is set (npm run engines starts a broker)');
    return;
  }
  eventBusContract(
    'Kafka',
    async (hooks) => {
      const kafka = new KafkaEventBus({
        brokers: brokers.split(',').map((b) => b.trim()),
        clientId: 'scores-contract-tests',
        partitions: 3,
        logLevel: 'error',
        onError: (err) => hooks.onError(err),
        heartbeatIntervalMs: 500,
        sessionTimeoutMs: 10_000,
        maxWaitTimeMs: 250,
      });
      // Remember the topics the test touched, to delete them afterwards.
      const topics = new Set<string>();
      const bus: EventBus = {
        publish: (topic: string, messages: BusMessage[]) => {
          topics.add(topic);
          return kafka.publish(topic, messages);
        },
        subscribe: (options: SubscribeBusOptions) => {
          topics.add(options.topic);
          return kafka.subscribe(options);
        },
        close: () => kafka.close(),
      };
      return {
        bus,
        cleanup: async () => {
          await kafka.deleteTopics([...topics]).catch(() => undefined);
          await kafka.close();
        },
      };
    },
    { deliveryMs: 30_000, quietMs: 2_000 },
  );

  it('keeps two deployments apart on one cluster by their topic prefix (KAFKA_TOPIC_PREFIX): same topic and group names, no message crosses', async function () {
    this.timeout(90_000);
    const run = randomUUID().slice(0, 8);
    const make = (prefix: string) =>
      new KafkaEventBus({ brokers: brokers.split(',').map((b) => b.trim()), clientId: 'scores-prefix-test', prefix, logLevel: 'nothing', heartbeatIntervalMs: 500, sessionTimeoutMs: 10_000, maxWaitTimeMs: 250 });
    const a = make(`a-${run}.`);
    const b = make(`b-${run}.`);
    const plain = make('');
    const got: Record<string, string[]> = { a: [], b: [] };
    try {
      for (const [name, bus] of [['a', a], ['b', b]] as const) {
        await bus.subscribe({ topic: 'scores.ingest', group: 'scores-ingest', fromBeginning: true, handler: async (m) => void got[name]!.push(m.value) });
      }
      await a.publish('scores.ingest', [{ key: null, value: 'for a' }]);
      await b.publish('scores.ingest', [{ key: null, value: 'for b' }]);
      const deadline = Date.now() + 30_000;
      while ((got['a']!.length === 0 || got['b']!.length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 1_000));
      expect(got).to.deep.equal({ a: ['for a'], b: ['for b'] });
      // On the cluster the topics carry the prefix.
      await plain.publish(`a-${run}.scores.ingest`, [{ key: null, value: 'by its full name' }]);
      const until = Date.now() + 30_000;
      while (got['a']!.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(got['a']).to.deep.equal(['for a', 'by its full name']);
    } finally {
      await a.deleteTopics(['scores.ingest']).catch(() => undefined);
      await b.deleteTopics(['scores.ingest']).catch(() => undefined);
      await Promise.all([a.close(), b.close(), plain.close()]);
    }
  });
});
