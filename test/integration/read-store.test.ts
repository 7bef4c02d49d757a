import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { PostgresReadStore } from '../../infra/postgresql/read-store.js';
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
  }, { snapshotConsistent: true });
});

describe('SQLite adapter snapshots', () => {
  const docs = defineCollection<{ id: string; n: number }>({ name: 'docs', key: (d) => d.id, fields: ['n'], indexes: [] });
  const later = defineCollection<{ id: string; n: number }>({ name: 'later', key: (d) => d.id, fields: [], indexes: [] });
  const all = async <T>(it: AsyncIterable<T>) => {
    const out: T[] = [];
    for await (const d of it) out.push(d);
    return out;
  };
  const put = (collection: string, id: string, n: number) => ({ op: 'upsert' as const, collection, id, doc: { id, n } });

  it('in memory, is the live store and says it is not one commit', async () => {
    const db = openSqlite(':memory:');
    const store = new SqliteReadStore(db);
    try {
      await store.register([docs]);
      await store.commit({ writes: [put('docs', 'a', 1)], checkpoints: { p: '1' } });
      const snap = await store.snapshot();
      expect(snap.consistent).to.equal(false);
      await store.commit({ writes: [put('docs', 'b', 2), put('docs', 'a', 3)], checkpoints: { p: '2' } });

      expect(await all(snap.scan(docs))).to.deep.equal([{ id: 'a', n: 3 }, { id: 'b', n: 2 }]);
      expect(await snap.checkpoint('p')).to.equal('2');
      await snap.close();
      expect(await store.count(docs, {})).to.equal(2);
    } finally {
      await store.close();
      db.close();
    }
  });

  it('in a file, sees a collection registered after it was taken as empty, and one never registered too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-read-store-'));
    const db = openSqlite(join(dir, 'read.db'));
    const store = new SqliteReadStore(db);
    try {
      await store.register([docs]);
      await store.commit({ writes: [put('docs', 'a', 1)], checkpoints: {} });
      const snap = await store.snapshot();
      await store.register([later]);
      await store.commit({ writes: [put('later', 'x', 1), put('docs', 'b', 2)], checkpoints: {} });

      expect(await all(snap.scan(later))).to.deep.equal([]);
      expect(await all(snap.scan(defineCollection<{ id: string }>({ name: 'nowhere', key: (d) => d.id, fields: [], indexes: [] })))).to.deep.equal([]);
      expect(await all(snap.scan(docs))).to.deep.equal([{ id: 'a', n: 1 }]);
      expect(await all(store.scan(later))).to.deep.equal([{ id: 'x', n: 1 }]);
      await snap.close();
    } finally {
      await store.close();
      db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('in a file, includes the commits handed to the writer thread before it was taken', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-read-store-'));
    const db = openSqlite(join(dir, 'read.db'));
    const store = new SqliteReadStore(db);
    try {
      await store.register([docs]);
      // Not awaited: a commit resolves once the one before it is written, so these may still be on their way.
      const commits = Array.from({ length: 20 }, (_, i) => store.commit({ writes: [put('docs', `d${String(i).padStart(2, '0')}`, i)], checkpoints: { p: String(i).padStart(2, '0') } }));
      const snap = await store.snapshot();
      await Promise.all(commits);

      expect(await all(snap.scan(docs, 7))).to.have.length(20);
      expect(await snap.checkpoint('p')).to.equal('19');
      await snap.close();
    } finally {
      await store.close();
      db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite adapter, sharing the file with the log writer', () => {
  const docs = defineCollection<{ id: string; n: number }>({ name: 'docs', key: (d) => d.id, fields: [], indexes: [] });

  /** A read store and another connection (the log writer's) on one file; `write(n)` commits doc a = n and checkpoint p = n. */
  async function withSharedFile(test: (f: { store: SqliteReadStore; other: SqliteDb; write: (n: number) => Promise<void> }) => Promise<void>): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'scores-read-store-'));
    const db = openSqlite(join(dir, 'scores.sqlite'), { synchronous: 'NORMAL' });
    const other = openSqlite(join(dir, 'scores.sqlite'));
    const store = new SqliteReadStore(db);
    const write = (n: number) => store.commit({ writes: [{ op: 'upsert', collection: 'docs', id: 'a', doc: { id: 'a', n } }], checkpoints: { p: String(n) } });
    try {
      await store.register([docs]);
      await test({ store, other, write });
    } finally {
      await store.close();
      db.close();
      other.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('writes behind: waits for a write lock another connection holds on its writer thread, reads meanwhile see the commits', () =>
    withSharedFile(async ({ store, other, write }) => {
      other.exec('BEGIN IMMEDIATE'); // the log writer, mid-commit
      await write(1); // handed to the writer thread, which waits for the lock
      expect(await store.get(docs, 'a')).to.deep.equal({ id: 'a', n: 1 });
      let second = false;
      void write(2).then(() => (second = true));
      let checkpointRead = false;
      const checkpoint = store.checkpoint('p').finally(() => (checkpointRead = true));
      // Timers still fire (the wait is on the writer thread, not in the event loop), but a commit
      // never gets more than one ahead of the writer, and a query waits for what is handed over.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect([second, checkpointRead]).to.deep.equal([false, false]);
      expect(await store.get(docs, 'a')).to.deep.equal({ id: 'a', n: 2 });
      other.exec('COMMIT');
      expect(await checkpoint).to.equal('2');
      expect(second).to.equal(true);
      expect(other.prepare('SELECT doc FROM rm_docs').get()).to.deep.equal({ doc: '{"id":"a","n":2}' });
    }));

  it('keeps a commit the writer fails and writes it once it can, refusing new commits meanwhile', () =>
    withSharedFile(async ({ store, other, write }) => {
      const failureOf = (p: Promise<unknown>) => p.then(() => null, (err: Error) => err);
      await write(1);
      expect(await store.checkpoint('p')).to.equal('1');
      other.exec('DROP TABLE rm_docs'); // the writer's next commit fails
      await write(2);
      // The writer fails commit 2 and retries it: the next commit learns it (and is not lost either).
      expect((await failureOf(write(3)))?.message).to.match(/no such table/);
      expect((await failureOf(write(4)))?.message).to.match(/no such table/);
      // Reads go on: the documents handed over from memory, the rest from what is stored.
      expect(await store.get(docs, 'a')).to.deep.equal({ id: 'a', n: 3 });
      expect(await store.checkpoint('p')).to.equal('1');
      other.exec('CREATE TABLE rm_docs (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)');
      const deadline = Date.now() + 10_000;
      while ((await store.checkpoint('p')) !== '3' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.checkpoint('p')).to.equal('3');
      await write(4);
      expect(await store.checkpoint('p')).to.equal('4');
      expect(other.prepare('SELECT doc FROM rm_docs').get()).to.deep.equal({ doc: '{"id":"a","n":4}' });
    }));
});

describe('MongoDB adapter', function () {
  const uri = process.env['MONGODB_URI'];
  if (!uri) {
    it('runs when MONGODB_URI is set (npm run engines starts FerretDB)');
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

describe('PostgreSQL adapter (read models)', function () {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts PostgreSQL)');
    return;
  }
  readStoreContract('PostgreSQL', async () => {
    // A schema per test: nothing leaks between tests or runs.
    const store = new PostgresReadStore(url, { schema: `rm_contract_${randomUUID().slice(0, 8)}` });
    return {
      store,
      cleanup: async () => {
        await store.dropSchema();
        await store.close();
      },
    };
  }, { snapshotConsistent: true });
});
