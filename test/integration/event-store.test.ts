import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { EventStoreDbEventStore } from '../../infra/eventstoredb/event-store.js';
import { eventStoreContract } from './event-store.contract.js';

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

describe('EventStoreDB adapter', function () {
  const url = process.env['ESDB_URL'];
  if (!url) {
    it('runs when ESDB_URL is set');
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
});
