import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { readStoreContract } from './read-store.contract.js';

describe('SQLite adapter', function () {
  readStoreContract('SQLite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-read-store-'));
    const db = openSqlite(join(dir, 'read.db'));
    const store = new SqliteReadStore(db);
    return {
      store,
      cleanup: async () => {
        await store.close();
        db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
});

describe('MongoDB adapter', function () {
  const uri = process.env['MONGODB_URI'];
  if (!uri) {
    it('runs when MONGODB_URI is set');
    return;
  }
  readStoreContract('MongoDB', async () => {
    // A database per test: nothing leaks between tests or runs.
    const store = new MongoReadStore(uri, `scores_contract_${randomUUID().slice(0, 8)}`);
    return {
      store,
      cleanup: async () => {
        await store.dropDatabase();
        await store.close();
      },
    };
  });
});
