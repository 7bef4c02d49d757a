import type { Logger } from 'pino';
import { logEncoding } from '../domain/scores/log-encoding.js';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import type { Clock } from '../core/clock.js';
import type { EventBus } from '../core/event-bus.port.js';
import type { EventStore } from '../core/event-store.port.js';
import type { ReadStore } from '../core/read-store.port.js';
import type { Config } from './config.js';
import type { Metrics } from './metrics/metrics.js';
import { InstrumentedEventStore } from './metrics/instrumented-event-store.js';
import { TokenBuckets, type RateLimiter } from './metering/token-buckets.js';
import { SharedTokenBuckets } from './metering/shared-buckets.js';

/** The log, the read models and the bus a process works on; `close` closes them in that order (the bus first). */
export interface Stores {
  events: EventStore;
  reads: ReadStore;
  bus: EventBus;
  /** The accounts' rate-limit buckets (RATE_LIMIT_STORE). */
  rates: RateLimiter;
  close(): Promise<void>;
}

type Embedded = (synchronous: 'FULL' | 'NORMAL') => SqliteDb;

/** Opens the stores the configuration names: the embedded SQLite file for each one no server URL is set for. */
export async function openStores(config: Config, clock: Clock, log: Logger, metrics: Metrics): Promise<Stores> {
  // Two connections to the one file: the log commits with a full fsync, read models without.
  const connections: SqliteDb[] = [];
  const embedded: Embedded = (synchronous) => {
    const db = openSqlite(config.sqliteFile, { synchronous });
    connections.push(db);
    return db;
  };
  const events = new InstrumentedEventStore(await openEventStore(config, clock, embedded), metrics);
  const reads = await openReadStore(config, embedded);
  const bus = await openBus(config, log);
  const limits = await openRateLimiter(config, log);
  return {
    events,
    reads,
    bus,
    rates: limits.rates,
    async close() {
      await limits.close();
      await bus.close();
      await events.close();
      await reads.close();
      for (const db of connections) db.close();
    },
  };
}

async function openEventStore(config: Config, clock: Clock, embedded: Embedded): Promise<EventStore> {
  if (config.esdbUrl) {
    const { EventStoreDbEventStore } = await import('../../infra/eventstoredb/event-store.js');
    return new EventStoreDbEventStore(config.esdbUrl, { codec: logEncoding });
  }
  if (config.postgresUrl) {
    const { PostgresEventStore } = await import('../../infra/postgresql/event-store.js');
    return new PostgresEventStore(config.postgresUrl, clock, { codec: logEncoding, debits: config.logDebits });
  }
  const store = new SqliteEventStore(embedded('FULL'), clock, { codec: logEncoding, debits: config.logDebits });
  await store.ready();
  return store;
}

async function openReadStore(config: Config, embedded: Embedded): Promise<ReadStore> {
  if (config.readStore === 'mongodb') {
    const { MongoReadStore } = await import('../../infra/mongodb/read-store.js');
    return new MongoReadStore(config.mongodbUri!, config.mongodbDb);
  }
  if (config.readStore === 'postgres') {
    const { PostgresReadStore } = await import('../../infra/postgresql/read-store.js');
    return new PostgresReadStore(config.postgresReadUrl!, { schema: config.readModelsSchema });
  }
  return new SqliteReadStore(embedded('NORMAL'));
}

async function openBus(config: Config, log: Logger): Promise<EventBus> {
  if (config.kafkaBrokers) {
    const { KafkaEventBus } = await import('../../infra/kafka/event-bus.js');
    return new KafkaEventBus({ brokers: config.kafkaBrokers, clientId: 'scores-service', prefix: config.kafkaTopicPrefix });
  }
  return new InMemoryEventBus({ onError: (err: unknown) => log.error({ err }, 'bus handler failed') });
}

/** The replicas' shared buckets in PostgreSQL, falling back to this process's own while it fails (docs/scaling.md). */
async function openRateLimiter(config: Config, log: Logger): Promise<{ rates: RateLimiter; close(): Promise<void> }> {
  if (config.rateLimitStore === 'memory' || !config.postgresUrl) return { rates: new TokenBuckets(), close: async () => undefined };
  const { PostgresTokenBuckets } = await import('../../infra/postgresql/rate-limits.js');
  const shared = new SharedTokenBuckets(new PostgresTokenBuckets(config.postgresUrl), {
    timeoutMs: config.rateLimitStoreTimeoutMs,
    onFallback: (err) =>
      err === null
        ? log.warn('rate-limit store answers again: the replicas share the limits again')
        : log.error({ err }, 'rate-limit store failed: each replica limits on its own until it answers'),
  });
  return { rates: shared, close: () => shared.close() };
}
