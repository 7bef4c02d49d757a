import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { INGEST_DLQ_TOPIC, INGEST_TOPIC } from '../../commands/ingest/ingest.reactor.js';
import { WEBHOOK_DELIVER_TOPIC } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { pgSession, withDatabase } from '../../infra/postgresql/database.js';
import { PostgresReadStore } from '../../infra/postgresql/read-store.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { tempDir, testEnv } from './server.js';

/**
 * A place of its own on the shared engines (`npm run engines`), so that suites and bench runs
 * sharing the servers keep apart: a PostgreSQL database (the log and, by default, the read models)
 * and, with `readStore: 'mongodb'`, a MongoDB-wire database of the same name,
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
  /** Where the read models are. */
  readStore: 'postgres' | 'mongodb';
  /**
   * The read models' place named `suffix` in this sandbox (none: the service's own): the variables
   * that point a service at it (a fresh replay's, to compare) and a store opened on it.
   */
  readModels(suffix?: string): ReadModelsPlace;
  /** Drops both databases (and the MongoDB-wire databases named in `also`), the topics and the directory. */
  drop(also?: readonly string[]): Promise<void>;
}

/** A place of the read models in a sandbox: see `EnginesSandbox.readModels`. */
export interface ReadModelsPlace {
  /** The variables that point a service at this place. */
  env: Record<string, string>;
  /** A read store opened on it (close it). */
  open(): ReadStore;
  /**
   * What the store holds there, by its own names: the collections (MongoDB) or tables (PostgreSQL),
   * e.g. `rm_g1_latest_scores`, and the projectors that have a checkpoint (generation n's as `g<n>/<projector>`).
   */
  list(): Promise<{ collections: string[]; checkpoints: string[] }>;
}

/**
 * The read store the fleet suites run on: PostgreSQL (the recommended deployment), or the
 * MongoDB-wire server with SCORES_FLEET_READ_STORE=mongodb (FerretDB: docs/scaling.md says what is
 * verified there).
 */
export const FLEET_READ_STORE: 'postgres' | 'mongodb' = process.env['SCORES_FLEET_READ_STORE'] === 'mongodb' ? 'mongodb' : 'postgres';

/** The engines a fleet suite needs on FLEET_READ_STORE: PostgreSQL and Kafka, and the MongoDB-wire server for its read models. */
export const FLEET_ENGINES: readonly string[] = FLEET_READ_STORE === 'mongodb' ? ['KAFKA_BROKERS', 'MONGODB_URI', 'POSTGRES_URL'] : ['KAFKA_BROKERS', 'POSTGRES_URL'];

/** The engines a suite needs with its read models on `readStore`: PostgreSQL, the MongoDB-wire server for FerretDB's, Kafka when it uses the bus. */
export function enginesFor(readStore: 'postgres' | 'mongodb', options: { kafka?: boolean } = {}): string[] {
  return [...(options.kafka ? ['KAFKA_BROKERS'] : []), ...(readStore === 'mongodb' ? ['MONGODB_URI'] : []), 'POSTGRES_URL'];
}

/** The engines' variables a suite needs that are unset (a suite runs only when this is empty). */
export function unsetEngines(names: readonly string[]): string[] {
  return names.filter((name) => !process.env[name]);
}

export interface SandboxOptions {
  kafka?: boolean;
  /** Where the read models are: PostgreSQL (the recommended deployment, default) or the MongoDB-wire server (FerretDB). */
  readStore?: 'postgres' | 'mongodb';
  extra?: Record<string, string>;
}

/** Opens a sandbox named `scores_<name>_<random>` at the clock `now`; `extra` is added to its env. */
export async function openEnginesSandbox(name: string, now: string, options: SandboxOptions = {}): Promise<EnginesSandbox> {
  const id = randomUUID().replaceAll('-', '').slice(0, 10);
  const database = `scores_${name}_${id}`;
  const dir = tempDir(`scores-${name}-`);
  const admin = await pgSession(process.env['POSTGRES_URL']!);
  await admin.query(`CREATE DATABASE ${database}`);
  const prefix = options.kafka ? `${name}-${id}.` : '';
  const mongodb = options.readStore === 'mongodb';
  const vars: Record<string, string> = {
    POSTGRES_URL: withDatabase(process.env['POSTGRES_URL']!, database),
    READ_STORE: mongodb ? 'mongodb' : 'postgres',
    ...(mongodb ? { MONGODB_URI: process.env['MONGODB_URI']!, MONGODB_DB: database } : {}),
    ...(options.kafka ? { KAFKA_BROKERS: process.env['KAFKA_BROKERS']!, KAFKA_TOPIC_PREFIX: prefix } : {}),
  };
  const env = testEnv(dir, now, { ...vars, ...options.extra });
  return {
    database,
    dir,
    vars,
    env,
    prefix,
    readStore: mongodb ? 'mongodb' : 'postgres',
    readModels: (suffix) => readModelsPlace(mongodb ? { mongodb: suffix ? `${database}_${suffix}` : database } : { postgres: vars['POSTGRES_URL']!, schema: suffix ? `read_models_${suffix}` : 'read_models' }),
    async drop(also = []) {
      if (options.kafka) {
        const bus = new KafkaEventBus({ brokers: process.env['KAFKA_BROKERS']!.split(','), clientId: `scores-${name}`, prefix, logLevel: 'nothing' });
        await bus.deleteTopics([INGEST_TOPIC, INGEST_DLQ_TOPIC, WEBHOOK_DELIVER_TOPIC]).catch(() => undefined);
        await bus.close().catch(() => undefined);
      }
      for (const db of mongodb ? [database, ...also] : []) {
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

/** The read models in a MongoDB-wire database, or in a PostgreSQL database's schema. */
function readModelsPlace(at: { mongodb: string } | { postgres: string; schema: string }): ReadModelsPlace {
  if ('mongodb' in at) {
    const open = () => new MongoReadStore(process.env['MONGODB_URI']!, at.mongodb);
    return {
      env: { MONGODB_DB: at.mongodb },
      open,
      async list() {
        const store = open();
        try {
          // The store's own database handle (the vendor client stays in infra/).
          type Listing = { toArray(): Promise<Record<string, unknown>[]> };
          const db = (store as unknown as { db: { listCollections(): Listing; collection(name: string): { find(): Listing } } }).db;
          const collections = (await db.listCollections().toArray()).map((c) => String(c['name']));
          const checkpoints = (await db.collection('projector_checkpoints').find().toArray()).map((d) => String(d['_id']));
          return { collections, checkpoints };
        } finally {
          await store.close();
        }
      },
    };
  }
  const { postgres, schema } = at;
  return {
    env: { READ_MODELS_SCHEMA: schema },
    open: () => new PostgresReadStore(postgres, { schema, poolMax: 2 }),
    async list() {
      const session = await pgSession(postgres);
      try {
        const tables = await session.query<{ name: string }>(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
          [schema],
        );
        const collections = tables.map((t) => t.name);
        const checkpoints = collections.includes('projector_checkpoints')
          ? (await session.query<{ projector: string }>(`SELECT projector FROM "${schema}".projector_checkpoints`)).map((c) => c.projector)
          : [];
        return { collections, checkpoints };
      } finally {
        await session.end();
      }
    },
  };
}

/** Runs `run` in a sandbox opened for it, dropped afterwards whatever happens (benchmarks). */
export async function inEnginesSandbox<T>(name: string, now: string, options: SandboxOptions, run: (sandbox: EnginesSandbox) => Promise<T>): Promise<T> {
  const sandbox = await openEnginesSandbox(name, now, options);
  try {
    return await run(sandbox);
  } finally {
    await sandbox.drop();
  }
}
