import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { readStoreContract } from './read-store.contract.js';
import { expect } from 'chai';
import { defineCollection } from '../../src/core/read-store.port.js';

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

describe('SQLite adapter, sharing the file with the log writer', () => {
  const docs = defineCollection<{ id: string; n: number }>({ name: 'docs', key: (d) => d.id, fields: [], indexes: [] });

  it('waits for a write lock another connection holds without blocking the event loop, then commits', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-read-store-'));
    const db = openSqlite(join(dir, 'scores.sqlite'), { synchronous: 'NORMAL' });
    const writer = openSqlite(join(dir, 'scores.sqlite'));
    const store = new SqliteReadStore(db);
    try {
      await store.register([docs]);
      writer.exec('BEGIN IMMEDIATE'); // the log writer, mid-commit
      let committed = false;
      const commit = store.commit({ writes: [{ op: 'upsert', collection: 'docs', id: 'a', doc: { id: 'a', n: 1 } }], checkpoints: { p: '1' } });
      void commit.then(() => (committed = true));
      // Timers still fire: the commit is waiting asynchronously, not in SQLite's busy handler.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(committed).to.equal(false);
      writer.exec('COMMIT');
      await commit;
      expect(await store.get(docs, 'a')).to.deep.equal({ id: 'a', n: 1 });
      expect(await store.checkpoint('p')).to.equal('1');
    } finally {
      await store.close();
      db.close();
      writer.close();
      await rm(dir, { recursive: true, force: true });
    }
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
