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
});
