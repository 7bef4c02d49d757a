import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { INGEST_DLQ_TOPIC, INGEST_TOPIC } from '../../commands/ingest/ingest.reactor.js';
import { WEBHOOK_DELIVER_TOPIC } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { pgSession, withDatabase } from '../../infra/postgresql/database.js';
import { tempDir, testEnv } from './server.js';

/**
 * A place of its own on the shared engines (`npm run engines`), so that suites and bench runs
 * sharing the servers keep apart: a PostgreSQL database and a MongoDB-wire database of one name,
 * a Kafka topic prefix (when `kafka`), a data directory, and `env` pointing a service at them.
 */
export interface EnginesSandbox {
  /** The PostgreSQL and MongoDB-wire database name (a suite may add databases named after it, dropped with `also`). */
  database: string;
  dir: string;
  /** The engines' variables alone (no data directory, no clock): for a process that brings its own. */
  vars: Record<string, string>;
  /** `vars` with the data directory and the clock (testEnv). */
  env: NodeJS.ProcessEnv;
  /** Kafka's topic prefix (empty without `kafka`). */
  prefix: string;
  /** Drops both databases (and the MongoDB-wire databases named in `also`), the topics and the directory. */
  drop(also?: readonly string[]): Promise<void>;
}

/** The engines' variables a suite needs that are unset (a suite runs only when this is empty). */
export function unsetEngines(names: readonly string[]): string[] {
  return names.filter((name) => !process.env[name]);
}

/** Opens a sandbox named `scores_<name>_<random>` at the clock `now`; `extra` is added to its env. */
export async function openEnginesSandbox(name: string, now: string, options: { kafka?: boolean; extra?: Record<string, string> } = {}): Promise<EnginesSandbox> {
  const id = randomUUID().replaceAll('-', '').slice(0, 10);
  const database = `scores_${name}_${id}`;
  const dir = tempDir(`scores-${name}-`);
  const admin = await pgSession(process.env['POSTGRES_URL']!);
  await admin.query(`CREATE DATABASE ${database}`);
  const prefix = options.kafka ? `${name}-${id}.` : '';
  const vars: Record<string, string> = {
    POSTGRES_URL: withDatabase(process.env['POSTGRES_URL']!, database),
    MONGODB_URI: process.env['MONGODB_URI']!,
    MONGODB_DB: database,
    ...(options.kafka ? { KAFKA_BROKERS: process.env['KAFKA_BROKERS']!, KAFKA_TOPIC_PREFIX: prefix } : {}),
  };
  const env = testEnv(dir, now, { ...vars, ...options.extra });
  return {
    database,
    dir,
    vars,
    env,
    prefix,
    async drop(also = []) {
      if (options.kafka) {
        const bus = new KafkaEventBus({ brokers: process.env['KAFKA_BROKERS']!.split(','), clientId: `scores-${name}`, prefix, logLevel: 'nothing' });
        await bus.deleteTopics([INGEST_TOPIC, INGEST_DLQ_TOPIC, WEBHOOK_DELIVER_TOPIC]).catch(() => undefined);
        await bus.close().catch(() => undefined);
      }
      for (const db of [database, ...also]) {
        const reads = new MongoReadStore(process.env['MONGODB_URI']!, db);
        // Bounded: a store that stopped answering must not hold the suite's report back.
        await Promise.race([reads.dropDatabase(), new Promise((r) => setTimeout(r, 30_000))]).catch(() => undefined);
        await reads.close().catch(() => undefined);
      }
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `run` in a sandbox opened for it, dropped afterwards whatever happens (benchmarks). */
export async function inEnginesSandbox<T>(name: string, now: string, options: { kafka?: boolean; extra?: Record<string, string> }, run: (sandbox: EnginesSandbox) => Promise<T>): Promise<T> {
  const sandbox = await openEnginesSandbox(name, now, options);
  try {
    return await run(sandbox);
  } finally {
    await sandbox.drop();
  }
}
