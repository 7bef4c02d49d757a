import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pgSession, withDatabase } from '../../infra/postgresql/database.js';
import type { PositionMode } from '../../infra/postgresql/event-log.sql.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { fixedClock, systemClock } from '../../src/core/clock.js';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';

import type { EventStore } from '../../src/core/event-store.port.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median } from './stats.js';

const DEBIT = {
  request_id: 'req_0123456789abcdef',
  endpoint: 'scores',
  channel: 'rest',
  cost: 2,
  period: '2024-03',
  at: '2024-03-15T12:00:00.000Z',
  prev_hash: 'a'.repeat(64),
  hash: 'b'.repeat(64),
};

/** A log to measure, opened `handles` times (as that many processes would), and how to drop it. */
interface Target {
  name: string;
  open(handles: number): Promise<{ stores: EventStore[]; drop: () => Promise<void> }>;
}

function sqliteTarget(): Target {
  return {
    name: 'SQLite',
    async open(handles) {
      const dir = tempDir('scores-bench-log-');
      const dbs = Array.from({ length: handles }, () => openSqlite(join(dir, 'events.sqlite')));
      const stores = dbs.map((db) => new SqliteEventStore(db, systemClock));
      return {
        stores,
        drop: async () => {
          for (const s of stores) await s.close();
          for (const db of dbs) db.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

function postgresTarget(url: string, positions: PositionMode): Target {
  return {
    name: `PG ${positions}`,
    async open(handles) {
      const schema = `bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const stores = Array.from({ length: handles }, () => new PostgresEventStore(url, systemClock, { schema, positions }));
      await stores[0]!.headPosition(); // the tables exist before the clock starts
      return {
        stores,
        drop: async () => {
          for (const s of stores) await s.close();
          const admin = await pgSession(url);
          await admin.query(`DROP SCHEMA ${schema} CASCADE`);
          await admin.end();
        },
      };
    },
  };
}

/**
 * What one metered call of one account adds to the PostgreSQL log (its `events` table with its
 * indexes, after VACUUM so that only live rows count), `inFlight` calls at a time, with lone
 * calls stored as debit records or (the baseline) as generic events.
 */
async function pgBytesPerCall(url: string, calls: number, inFlight: number, debits: 'records' | 'events'): Promise<number> {
  const schema = `bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const clock = fixedClock('2024-03-15T12:00:00Z');
  const store = new PostgresEventStore(url, clock, { schema, debits, codec: logEncoding });
  const admin = await pgSession(url);
  const size = async () => {
    await admin.query(`VACUUM ${schema}.events`);
    return Number((await admin.query<{ n: string }>(`SELECT pg_total_relation_size('${schema}.events') AS n`))[0]!.n);
  };
  try {
    const ledger = new LedgerService(store, clock);
    await ledger.execute('acct-bench', { type: 'OpenLedger', data: { account_id: 'acct-bench', tier: 'enterprise', pro: false } });
    const before = await size();
    let next = 0;
    const worker = async () => {
      while (next < calls) {
        const i = next++;
        await ledger.debit('acct-bench', { request_id: `req_${randomBytes(12).toString('base64url')}`, endpoint: 'scores', channel: 'rest', cost: 1 + (i % 3) });
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    return ((await size()) - before) / calls;
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

/**
 * Durable appends per second: 200 writers, each appending one debit at a time to its own stream
 * with its expected revision (the ledger's pattern), spread over `handles` store handles.
 */
async function appendsPerSecond(target: Target, handles: number): Promise<number> {
  const { stores, drop } = await target.open(handles);
  try {
    const writers = 200;
    const each = 25;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const store = stores[w % stores.length]!;
        for (let i = 0; i < each; i++) await store.append(`ledger-${w}`, [{ type: 'CreditsDebited', data: DEBIT }], i === 0 ? 'no_stream' : i - 1);
      }),
    );
    return (writers * each) / ((performance.now() - t0) / 1000);
  } finally {
    await drop();
  }
}

/** Events per second reading a 100,000-event log from the start in pages of 1,000 (a replay's read side). */
async function scanPerSecond(target: Target): Promise<number> {
  const { stores, drop } = await target.open(1);
  const store = stores[0]!;
  try {
    for (let i = 0; i < 100; i++) {
      await store.append(`ledger-${i}`, Array.from({ length: 1000 }, () => ({ type: 'CreditsDebited', data: DEBIT })));
    }
    const t0 = performance.now();
    let after: string | null = null;
    let read = 0;
    for (;;) {
      const page = await store.readAll({ after, maxCount: 1000 });
      if (page.length === 0) break;
      read += page.length;
      after = page[page.length - 1]!.position;
    }
    return read / ((performance.now() - t0) / 1000);
  } finally {
    await drop();
  }
}

/** The whole service: seed the demo dataset, then rebuild every read model from the log (score rows/s). */
async function serviceReplay(now: string, env: Record<string, string>): Promise<{ seed: number; replay: number }> {
  const dir = tempDir('scores-bench-pg-');
  const services = await openServices(loadConfig(testEnv(dir, now, env)));
  try {
    const t0 = performance.now();
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    const seed = (performance.now() - t0) / 1000;
    let rows = 0;
    for await (const day of services.reads.scan(dailyScores)) rows += day.tickers.length;
    const t1 = performance.now();
    await services.runner.replay();
    return { seed, replay: rows / ((performance.now() - t1) / 1000) };
  } finally {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The service on a database of its own for one run. */
async function withFreshDatabase<T>(url: string, run: (url: string) => Promise<T>): Promise<T> {
  const database = `scores_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = await pgSession(url);
  await admin.query(`CREATE DATABASE ${database}`);
  try {
    return await run(withDatabase(url, database));
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}

/**
 * The PostgreSQL event log beside the embedded one, in the same run: appends (one process, and
 * four processes racing), a scan of the log, and the service's seed and replay. Figures only
 * (INFO): the engine runs on whatever machine POSTGRES_URL names.
 */
export async function benchPostgresLog(runs: number, now: string): Promise<void> {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    process.stdout.write('SKIP  PostgreSQL event log: POSTGRES_URL is not set (npm run engines starts one and prints it)\n');
    return;
  }
  for (const inFlight of [1, 50]) {
    const records = await pgBytesPerCall(url, 5_000, inFlight, 'records');
    const events = await pgBytesPerCall(url, 5_000, inFlight, 'events');
    info(`PostgreSQL log bytes per metered call, ${inFlight} in flight (5,000 calls, table + indexes)`, `${fmt(records, 0)} B`, `(baseline, lone calls as generic events: ${fmt(events, 0)} B)`);
  }
  const targets = [sqliteTarget(), postgresTarget(url, 'serialised'), postgresTarget(url, 'fenced')];
  // Targets take turns within each run: the machine's load drifts, each gets a share of it.
  for (const handles of [1, 4]) {
    const figures = targets.map(() => [] as number[]);
    for (let i = 0; i < runs; i++) for (const [k, t] of targets.entries()) figures[k]!.push(await appendsPerSecond(t, handles));
    for (const [k, t] of targets.entries()) {
      info(`appends/s, 200 writers, ${handles} handle${handles > 1 ? 's' : ''}, ${t.name}`, `${fmt(median(figures[k]!), 0)}/s`, `(median of ${runs})`);
    }
  }
  const scans = targets.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) for (const [k, t] of targets.entries()) scans[k]!.push(await scanPerSecond(t));
  for (const [k, t] of targets.entries()) info(`log scan events/s, ${t.name}`, `${fmt(median(scans[k]!), 0)}/s`, `(median of ${runs})`);
  const embedded: { seed: number; replay: number }[] = [];
  const postgres: { seed: number; replay: number }[] = [];
  for (let i = 0; i < runs; i++) {
    embedded.push(await serviceReplay(now, {}));
    postgres.push(await withFreshDatabase(url, (db) => serviceReplay(now, { POSTGRES_URL: db })));
    process.stderr.write(
      `  run ${i + 1}/${runs}: seed ${fmt(embedded[i]!.seed)} s / ${fmt(postgres[i]!.seed)} s, replay ${fmt(embedded[i]!.replay, 0)} / ${fmt(postgres[i]!.replay, 0)} rows/s (embedded / PostgreSQL)\n`,
    );
  }
  for (const [name, r] of [['SQLite', embedded], ['PG serialised', postgres]] as const) {
    info(`seed full demo dataset, log on ${name}`, `${fmt(median(r.map((x) => x.seed)))} s`, `(median of ${runs})`);
    info(`replay throughput, log on ${name}`, `${fmt(median(r.map((x) => x.replay)), 0)} score rows/s`, `(median of ${runs})`);
  }
}
