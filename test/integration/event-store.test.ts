import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { EventStoreDbEventStore } from '../../infra/eventstoredb/event-store.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import type { PositionMode } from '../../infra/postgresql/event-log.sql.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { eventStoreContract } from './event-store.contract.js';
import { expect } from 'chai';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { EventCodec, EventStore } from '../../src/core/event-store.port.js';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';
import { randomUUID } from 'node:crypto';

/**
 * The log encoding through an adapter: a day of closes appended with the codec is stored as a
 * table (what a store without it reads back) and read back as rows through the codec.
 */
function logEncodingSuite(open: (codec?: EventCodec) => Promise<EventStore>, close: () => Promise<void>) {
  describe('with the log encoding', () => {
    after(close);

    it('stores a bulk event as a table and reads it back as the rows written', async () => {
      const encoded = await open(logEncoding);
      const plain = await open();
      const stream = `prices-test-${randomUUID()}`;
      const data = { date: '2024-01-02', closes: [{ ticker: 'AAPL', close: 185.64 }, { ticker: 'MSFT', close: 370.87 }] };
      await encoded.append(stream, [{ type: 'ClosePricesRecorded', data }], 'no_stream');
      expect((await encoded.readStream(stream)).map((e) => e.data)).to.deep.equal([data]);
      expect((await plain.readStream(stream)).map((e) => e.data)).to.deep.equal([
        { date: '2024-01-02', table: { ticker: ['AAPL', 'MSFT'], close: [185.64, 370.87] } },
      ]);
    });
  });
}

describe('SQLite adapter', function () {
  eventStoreContract('SQLite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-event-store-'));
    const file = join(dir, 'events.db');
    const handles: { db: ReturnType<typeof openSqlite>; store: SqliteEventStore }[] = [];
    const open = () => {
      const db = openSqlite(file);
      const store = new SqliteEventStore(db, systemClock);
      handles.push({ db, store });
      return store;
    };
    return {
      store: open(),
      isolated: true,
      atomicAppendMany: true,
      another: async () => open(),
      cleanup: async () => {
        for (const h of handles) {
          await h.store.close();
          h.db.close();
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
});

describe('SQLite adapter', () => {
  let dir = '';
  const opened: { db: ReturnType<typeof openSqlite>; store: SqliteEventStore }[] = [];
  logEncodingSuite(
    async (codec) => {
      dir ||= await mkdtemp(join(tmpdir(), 'scores-event-store-'));
      const db = openSqlite(join(dir, 'events.db'));
      const store = new SqliteEventStore(db, systemClock, { codec });
      opened.push({ db, store });
      return store;
    },
    async () => {
      for (const o of opened) {
        await o.store.close();
        o.db.close();
      }
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  );
});

describe('SQLite adapter, sharing the file with the read models', () => {
  it('keeps every append while the read-model connection commits all the time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-event-store-'));
    const file = join(dir, 'scores.sqlite');
    const logDb = openSqlite(file);
    const readDb = openSqlite(file, { synchronous: 'NORMAL' });
    const events = new SqliteEventStore(logDb, systemClock);
    const reads = new SqliteReadStore(readDb);
    const docs = defineCollection<{ id: string; n: number }>({ name: 'docs', key: (d) => d.id, fields: [], indexes: [] });
    try {
      await reads.register([docs]);
      let appending = true;
      let commits = 0;
      // The projector's side: a read-model commit whenever the event loop is free.
      const projecting = (async () => {
        while (appending) {
          await reads.commit({ writes: [{ op: 'upsert', collection: 'docs', id: 'a', doc: { id: 'a', n: commits } }], checkpoints: {} });
          commits++;
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      // The API's side: 40 streams appending 25 times each, every append read-then-write.
      await Promise.all(
        Array.from({ length: 40 }, async (_, s) => {
          for (let i = 0; i < 25; i++) await events.append(`ledger-${s}`, [{ type: 'CreditsDebited', data: { i } }], i === 0 ? 'no_stream' : i - 1);
        }),
      );
      appending = false;
      await projecting;
      expect(commits).to.be.greaterThan(0);
      expect(await events.headPosition()).to.equal('00000000000000001000');
    } finally {
      await events.close();
      await reads.close();
      logDb.close();
      readDb.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('EventStoreDB adapter', function () {
  const url = process.env['ESDB_URL'];
  if (!url) {
    // No registry the project's machines reach (npm, Debian, Maven Central, the Go module proxy, PyPI,
    // crates.io) serves an EventStoreDB or KurrentDB server, so `npm run engines` cannot start one.
    it('runs when ESDB_URL is set: no EventStoreDB server can be installed here (npm run engines starts none)');
    return;
  }
  eventStoreContract('EventStoreDB', async () => {
    const stores = [new EventStoreDbEventStore(url)];
    return {
      store: stores[0]!,
      isolated: false,
      atomicAppendMany: false,
      another: async () => {
        const other = new EventStoreDbEventStore(url);
        stores.push(other);
        return other;
      },
      cleanup: async () => {
        for (const s of stores) await s.close();
      },
    };
  });
  const opened: EventStoreDbEventStore[] = [];
  logEncodingSuite(
    (codec) => {
      const store = new EventStoreDbEventStore(url, { codec });
      opened.push(store);
      return Promise.resolve(store);
    },
    async () => {
      for (const s of opened) await s.close();
    },
  );
});

describe('PostgreSQL adapter', function () {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  // Each test gets a schema of its own: an empty log, as the embedded store's fresh file.
  const freshLog = async (positions: PositionMode) => {
    const schema = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const stores: PostgresEventStore[] = [];
    const open = (codec?: EventCodec) => {
      const store = new PostgresEventStore(url, systemClock, { schema, positions, codec });
      stores.push(store);
      return store;
    };
    const cleanup = async () => {
      for (const s of stores) await s.close();
      const admin = await pgSession(url);
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    };
    return { open, cleanup };
  };
  for (const positions of ['serialised', 'fenced'] as const) {
    eventStoreContract(`PostgreSQL (${positions} positions)`, async () => {
      const log = await freshLog(positions);
      return { store: log.open(), isolated: true, atomicAppendMany: true, another: async () => log.open(), cleanup: log.cleanup };
    });
  }
  let encoded: Awaited<ReturnType<typeof freshLog>> | null = null;
  logEncodingSuite(
    async (codec) => {
      encoded ??= await freshLog('serialised');
      return encoded.open(codec);
    },
    async () => {
      await encoded?.cleanup();
    },
  );
});
