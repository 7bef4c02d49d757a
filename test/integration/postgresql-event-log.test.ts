import { expect } from 'chai';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import type { RecordedEvent, Subscription } from '../../src/core/event-store.port.js';
import { pgSession, type PgSession } from '../../infra/postgresql/database.js';
import type { PositionMode } from '../../infra/postgresql/event-log.sql.js';
import { PostgresEventStore, type PostgresEventStoreOptions } from '../../infra/postgresql/event-store.js';
import { PostgresReadStore } from '../../infra/postgresql/read-store.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { GENESIS_HASH, sealEvent, verifyChain } from '../../src/domain/ledger/ledger.events.js';

/**
 * What the PostgreSQL event log promises beyond the contract every adapter meets: no catch-up
 * reader skips an event whose transaction committed after a later one, a group commit keeps each
 * writer's multi-stream append whole, and subscribers are woken by notifications.
 */
describe('PostgreSQL event log', function () {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  let schema: string;
  let admin: PgSession;
  let stores: PostgresEventStore[];
  let subscription: Subscription | null;
  const open = (options: PostgresEventStoreOptions = {}) => {
    const store = new PostgresEventStore(url, systemClock, { schema, ...options });
    stores.push(store);
    return store;
  };

  beforeEach(async function () {
    schema = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    admin = await pgSession(url);
    stores = [];
    subscription = null;
  });

  afterEach(async function () {
    // A failed test may have left an append waiting for the lock: let it go before closing.
    await admin.query(`SELECT pg_advisory_unlock_all()`);
    await subscription?.stop();
    for (const s of stores) await s.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  for (const positions of ['serialised', 'fenced'] as const satisfies PositionMode[]) {
    describe(`When a transaction that started first commits last (${positions} positions)`, function () {
      it('a catch-up reader delivers its event before the later one, and skips neither', async function () {
        const reader = open({ positions });
        const first = open({ positions });
        const second = open({ positions });
        const warmUp = (await reader.append('warm-up', [{ type: 'Opened', data: {} }])).position;
        // A fenced log's head stops below any transaction still running on the server, in any
        // database (another suite's, on a shared server): wait until it holds the warm-up.
        let head = await reader.headPosition();
        for (const deadline = Date.now() + 10_000; head !== warmUp && Date.now() < deadline; head = await reader.headPosition()) await sleep(20);
        expect(head).to.equal(warmUp);
        // Appends to `slow-…` streams stop inside their transaction, after their row got its
        // position and transaction id, until this session lets go of advisory lock 4242.
        await admin.query(`CREATE FUNCTION ${schema}.hold() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.stream_id LIKE 'slow-%' THEN PERFORM pg_advisory_xact_lock_shared(4242); END IF; RETURN NEW; END $$`);
        await admin.query(`CREATE TRIGGER hold BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.hold()`);
        await admin.query('SELECT pg_advisory_lock(4242)');
        const seen: RecordedEvent[] = [];
        const errors: unknown[] = [];
        subscription = reader.subscribeToAll({ after: head, onEvents: async (batch) => void seen.push(...batch), onError: (e) => errors.push(e) });

        const slow = first.append('slow-1', [{ type: 'StartedFirst', data: {} }]);
        await waitFor(admin, `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
        const fast = second.append('fast-1', [{ type: 'StartedSecond', data: {} }]);
        if (positions === 'fenced') {
          // The later transaction is committed, at a higher number, while the first is open.
          await fast;
          const committed = await admin.query<{ stream_id: string; position: string }>(
            `SELECT stream_id, position FROM ${schema}.events WHERE stream_id = 'fast-1'`,
          );
          const [inFlight] = await admin.query<{ last_value: string }>(`SELECT last_value FROM ${schema}.event_position`);
          expect(committed).to.have.length(1);
          expect(Number(committed[0]!.position)).to.equal(Number(inFlight!.last_value));
        } else {
          // The later transaction waits for the append lock: nothing commits out of order.
          await waitFor(admin, `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted HAVING count(*) = 2`);
        }
        expect(await reader.readAll({ after: head })).to.deep.equal([]);

        await admin.query('SELECT pg_advisory_unlock(4242)');
        await Promise.all([slow, fast]);
        await waitUntil(() => seen.length >= 2);

        expect(seen.map((e) => e.type)).to.deep.equal(['StartedFirst', 'StartedSecond']);
        expect(seen[0]!.position < seen[1]!.position).to.equal(true);
        expect((await reader.readAll({ after: head })).map((e) => e.type)).to.deep.equal(['StartedFirst', 'StartedSecond']);
        expect(await reader.headPosition()).to.equal(seen[1]!.position);
        expect(errors).to.deep.equal([]);
      });
    });
  }

  describe('When an unrelated transaction stays open on the same server', function () {
    it('a serialised log shows new events at once; a fenced log only once that transaction ends', async function () {
      const serialised = open({ positions: 'serialised' });
      const fenced = new PostgresEventStore(url, systemClock, { schema: `${schema}_f`, positions: 'fenced' });
      stores.push(fenced);
      await Promise.all([serialised.headPosition(), fenced.headPosition()]);
      // Another application's write transaction, left open (an idle-in-transaction session).
      const other = await pgSession(url);
      try {
        await other.query('BEGIN');
        await other.query('SELECT pg_current_xact_id()');
        await serialised.append('s', [{ type: 'Appended', data: {} }]);
        await fenced.append('s', [{ type: 'Appended', data: {} }]);

        expect(await serialised.readAll()).to.have.length(1);
        expect(await fenced.readAll()).to.deep.equal([]);
        expect(await fenced.readStream('s')).to.have.length(1);

        await other.query('COMMIT');
        expect(await fenced.readAll()).to.have.length(1);
      } finally {
        await other.end();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema}_f CASCADE`);
      }
    });
  });

  describe('When transaction ids gain a digit (fenced positions)', function () {
    it('orders events by transaction id as a number, not as text', async function () {
      const store = open({ positions: 'fenced' });
      await store.append('before', [{ type: 'Earlier', data: {} }]);
      const [row] = await admin.query<{ tx: string }>(`SELECT tx::text AS tx FROM ${schema}.events`);
      const boundary = 10 ** row!.tx.length;
      const [now] = await admin.query<{ tx: string }>('SELECT pg_current_xact_id()::text AS tx');
      const burn = boundary - Number(now!.tx);
      if (burn > 1_000_000) this.skip(); // a long-lived cluster: too many ids to use up here (a fresh one, as in CI, has few)
      // Use up transaction ids until the next one has one more digit than the first event's.
      await admin.query('SET synchronous_commit = off');
      await admin.query(`DO $$ BEGIN FOR i IN 1..${burn} LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`);
      await store.append('after', [{ type: 'Later', data: {} }]);

      const log = await store.readAll();

      expect(log.map((e) => e.type)).to.deep.equal(['Earlier', 'Later']);
      expect(await store.headPosition()).to.equal(log[1]!.position);
      expect(await store.readAll({ after: log[0]!.position })).to.have.length(1);
    });
  });

  describe('When writers share one group commit', function () {
    it('keeps each multi-stream append whole: a conflict on one stream writes none of its streams, the others commit', async function () {
      const store = open();
      await store.append('account-b', [{ type: 'Opened', data: {} }]);

      // Queued in the same tick: one transaction for all three writers.
      const [refused, kept, duplicate] = await Promise.allSettled([
        store.appendMany([
          { streamId: 'ingest-a', events: [{ type: 'Ingested', data: { n: 1 } }], expectedRevision: 'no_stream' },
          { streamId: 'account-b', events: [{ type: 'Debited', data: {} }], expectedRevision: 5 },
        ]),
        store.appendMany([
          { streamId: 'ingest-c', events: [{ type: 'Ingested', data: { n: 2 } }] },
          { streamId: 'account-b', events: [{ type: 'Credited', data: {} }], expectedRevision: 0 },
        ]),
        store.appendMany([
          { streamId: 'ingest-d', events: [{ type: 'Ingested', data: { n: 3 } }] },
          { streamId: 'ingest-e', events: [{ type: 'Ingested', data: {}, id: 'same-id' }, { type: 'Ingested', data: {}, id: 'same-id' }] },
        ]),
      ]);

      expect(refused.status).to.equal('rejected');
      expect((refused as PromiseRejectedResult).reason).to.be.instanceOf(ConcurrencyError);
      expect(kept.status).to.equal('fulfilled');
      expect(duplicate.status).to.equal('rejected');
      expect((duplicate as PromiseRejectedResult).reason).to.include({ code: '23505' });
      expect(await store.readStream('ingest-a')).to.deep.equal([]);
      expect(await store.readStream('ingest-d')).to.deep.equal([]);
      expect((await store.readStream('ingest-c')).map((e) => e.data)).to.deep.equal([{ n: 2 }]);
      expect((await store.readStream('account-b')).map((e) => e.type)).to.deep.equal(['Opened', 'Credited']);
      expect((await store.readAll()).map((e) => e.streamId)).to.deep.equal(['account-b', 'ingest-c', 'account-b']);
    });
  });

  for (const positions of ['serialised', 'fenced'] as const satisfies PositionMode[]) {
    describe(`When two processes append to the same stream at once (${positions} positions)`, function () {
      it('takes every append with any revision once, and refuses a stale expected revision', async function () {
        const [a, b] = [open({ positions }), open({ positions })];
        await a.append('usage', [{ type: 'Opened', data: {} }]);

        const anyRevision = await Promise.allSettled(
          Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).append('usage', [{ type: 'Used', data: { i } }])),
        );
        const sameExpected = await Promise.allSettled([a, b].map((s) => s.append('usage', [{ type: 'Closed', data: {} }], 60)));

        expect(anyRevision.filter((o) => o.status === 'rejected')).to.deep.equal([]);
        expect(sameExpected.map((o) => o.status).sort()).to.deep.equal(['fulfilled', 'rejected']);
        expect((sameExpected.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).to.be.instanceOf(ConcurrencyError);
        const stream = await a.readStream('usage');
        expect(stream.map((e) => e.revision)).to.deep.equal(Array.from({ length: 62 }, (_, i) => i));
        expect(stream.filter((e) => e.type === 'Used').map((e) => (e.data as { i: number }).i).sort((x, y) => x - y)).to.deep.equal(
          Array.from({ length: 60 }, (_, i) => i),
        );
      });
    });
  }

  describe('When a writer names the revision it expects', function () {
    it("appends without reading the stream's head first, and reads it only when the revision was wrong", async function () {
      const store = open();
      const opened = await store.append('ledger-a', [{ type: 'Opened', data: {} }], 'no_stream');
      // The statements sent, by their first words (the heads read begins `SELECT s.stream_id`).
      const sent: string[] = [];
      // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be called with the client as `this`, and put back below
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const q = args[0] as string | { text?: string };
        sent.push((typeof q === 'string' ? q : (q.text ?? '')).trim().slice(0, 20));
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        let revision = opened.nextExpectedRevision;
        for (let i = 0; i < 10; i++) revision = (await store.append('ledger-a', [{ type: 'Debited', data: { i } }], revision)).nextExpectedRevision;
        expect(sent.filter((t) => t.startsWith('SELECT s.stream_id'))).to.deep.equal([]);
        expect(sent).to.have.length(10);

        const stale = await store.append('ledger-a', [{ type: 'Debited', data: {} }], 3).catch((err: unknown) => err);
        expect(stale).to.be.instanceOf(ConcurrencyError);
        expect(sent.filter((t) => t.startsWith('SELECT s.stream_id'))).to.have.length(1);
      } finally {
        pg.Client.prototype.query = query;
      }
      expect((await store.readStream('ledger-a')).map((e) => e.revision)).to.deep.equal(Array.from({ length: 11 }, (_, i) => i));
    });
  });

  describe('When another process appends', function () {
    it('a subscriber is woken by the notification, not by its poll', async function () {
      const subscriber = open({ pollMs: 10 * 60_000 });
      const writer = open();
      await writer.append('warm-up', [{ type: 'Opened', data: {} }]);
      const seen: RecordedEvent[] = [];
      let caughtUp = false;
      subscription = subscriber.subscribeToAll({ after: null, onEvents: async (b) => void seen.push(...b), onCaughtUp: () => (caughtUp = true) });
      await waitUntil(() => caughtUp && subscriber.listening);

      await writer.append('cli', [{ type: 'KeyCreated', data: {} }]);
      await waitUntil(() => seen.length === 2);

      expect(seen.map((e) => e.type)).to.deep.equal(['Opened', 'KeyCreated']);
    });

    it('a subscriber whose LISTEN connection dies keeps delivering, and listens again', async function () {
      const subscriber = open({ pollMs: 200 });
      const writer = open();
      const seen: RecordedEvent[] = [];
      subscription = subscriber.subscribeToAll({ after: null, onEvents: async (b) => void seen.push(...b) });
      await waitUntil(() => subscriber.listening);

      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = 'scores-listen' AND query = 'LISTEN ${schema}_events'`,
      );
      expect(killed).to.have.length(1);
      await waitUntil(() => !subscriber.listening);
      await writer.append('cli', [{ type: 'KeyCreated', data: {} }]);
      await waitUntil(() => seen.length === 1);
      await waitUntil(() => subscriber.listening);
      await writer.append('cli', [{ type: 'KeyRevoked', data: {} }]);
      await waitUntil(() => seen.length === 2);

      expect(seen.map((e) => e.type)).to.deep.equal(['KeyCreated', 'KeyRevoked']);
    });
  });

  for (const positions of ['serialised', 'fenced'] as const satisfies PositionMode[]) {
    describe(`When a subscriber reads the data of some event types only (${positions} positions)`, function () {
      it('hands every event in order, with the data of those types and null for the others', async function () {
        const store = open({ positions });
        await store.append('a-1', [
          { type: 'Big', data: { rows: [1, 2, 3] } },
          { type: 'Small', data: { n: 1 } },
          { type: 'Big', data: { rows: [4] } },
        ]);
        await store.append('b-1', [{ type: 'Small', data: { n: 2 } }]);
        const seen: RecordedEvent[] = [];
        await new Promise<void>((resolve, reject) => {
          subscription = store.subscribeToAll({ dataTypes: ['Small'], onEvents: async (batch) => void seen.push(...batch), onCaughtUp: resolve, onError: reject });
        });
        const all = await store.readAll();
        expect(seen.map((e) => [e.position, e.type, e.streamId])).to.deep.equal(all.map((e) => [e.position, e.type, e.streamId]));
        expect(seen.map((e) => e.data)).to.deep.equal([null, { n: 1 }, null, { n: 2 }]);
      });
    });
  }

  describe('When a log is created on PostgreSQL 14 or later', function () {
    it("compresses the events' data with LZ4, and the read models' documents too", async function () {
      const [{ v }] = (await admin.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v")) as [{ v: number }];
      if (v < 140000) this.skip();
      await open().append('lz4-1', [{ type: 'Opened', data: {} }]);
      const reads = new PostgresReadStore(url, { schema: `${schema}_rm`, poolMax: 1 });
      try {
        await reads.register([defineCollection<{ id: string }>({ name: 'docs', key: (d) => d.id, fields: [], indexes: [] })]);
        const compression = await admin.query<{ c: string }>(
          `SELECT attcompression AS c FROM pg_attribute WHERE (attrelid, attname) IN (('${schema}.events'::regclass, 'data'), ('${schema}_rm.rm_docs'::regclass, 'doc'))`,
        );
        expect(compression.map((r) => r.c)).to.deep.equal(['l', 'l']);
      } finally {
        await reads.dropSchema();
        await reads.close();
      }
    });
  });

  describe('When a log is opened with the other position mode', function () {
    it('refuses, naming the mode the log was created with', async function () {
      await open({ positions: 'serialised' }).append('s', [{ type: 'A', data: {} }]);
      const other = open({ positions: 'fenced' });

      const err = await other.readAll().then(
        () => null,
        (e: unknown) => e,
      );

      expect(String(err)).to.include('orders positions "serialised"');
    });
  });

  describe('When a call charged alone is appended (debit records)', function () {
    /** Lone debits of one ledger, chained as the ledger seals them. */
    const debits = (n: number, from: number, prev: string) => {
      const out: { type: string; data: Record<string, unknown> }[] = [];
      for (let i = from; i < from + n; i++) {
        const e = sealEvent(
          'CreditsDebited',
          { request_id: i % 2 ? `req_${String(i).padStart(16, 'Q')}` : `client-${i}`, endpoint: 'scores', channel: 'rest', cost: 2 + i, from_allowance: 2 + i, from_prepaid: 0, from_overage: 0, period: '2024-03' },
          `2024-03-0${1 + (i % 9)}T10:00:00.000Z`,
          prev,
        );
        out.push(e as unknown as (typeof out)[number]);
        prev = e.data.hash;
      }
      return out;
    };

    it('stores the old form and the record side by side, and reads back both exactly as appended', async function () {
      const before = open({ debits: 'events' });
      const old = debits(3, 0, GENESIS_HASH);
      await before.append('ledger-a', old);
      await before.close();
      const after = open();
      const fresh = debits(3, 3, old[2]!.data['hash'] as string);
      await after.append('ledger-a', fresh, 2);
      const read = await after.readStream('ledger-a');
      expect(read.map((e) => JSON.stringify([e.type, e.data]))).to.deep.equal([...old, ...fresh].map((e) => JSON.stringify([e.type, e.data])));
      expect(verifyChain(read)).to.equal(null);
      const rows = await admin.query<{ n: number; records: number }>(`SELECT count(*)::int AS n, count(record)::int AS records FROM ${schema}.events`);
      expect(rows[0]).to.deep.equal({ n: 6, records: 3 });
      const all = await after.readAll();
      expect(all.map((e) => e.id)).to.have.lengthOf(6);
      expect(new Set(all.map((e) => e.id)).size).to.equal(6);
      // The (stream, revision) index still refuses a second writer on the same revision.
      const err = await after.append('ledger-a', debits(1, 9, GENESIS_HASH), 2).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(ConcurrencyError);
    });
  });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** Until `sql` returns a row (a lock someone waits for, say). */
async function waitFor(admin: PgSession, sql: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await admin.query(sql)).length === 0) {
    if (Date.now() > deadline) throw new Error(`nothing matched within ${timeoutMs} ms: ${sql}`);
    await sleep(10);
  }
}
