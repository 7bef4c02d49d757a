import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedClock, systemClock, type Clock } from '../../src/core/clock.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { JobLease, LeaseLostError, leaseStreamOf } from '../../src/core/lease.js';
import { runWhileOwned, type LeaseRun } from '../../src/core/lease-runner.js';
import { fencedEventStore } from '../../src/core/fenced-event-store.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { pgSession } from '../../infra/postgresql/database.js';

/** Two handles on one log, as two worker processes would open it. */
interface Log {
  one: EventStore;
  two: EventStore;
  cleanup(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

function jobLeaseSuite(name: string, open: () => Promise<Log>): void {
  describe(`Job leases on ${name}`, function () {
    let log: Log;
    let job: string;
    const runs: LeaseRun[] = [];
    const lease = (store: EventStore, owner: string, clock: Clock, ttlMs = 10_000) => new JobLease(store, clock, { job, owner, ttlMs });
    const jobEvent = (n: number) => ({ streamId: `webhooks-${job}`, events: [{ type: 'BatchDecided', data: { n } }] });

    beforeEach(async function () {
      log = await open();
      job = `webhooks-${randomUUID().slice(0, 8)}`;
    });

    afterEach(async function () {
      for (const r of runs.splice(0)) await r.stop();
      await log.cleanup();
    });

    it('lets exactly one of several owners racing for a free lease take it', async function () {
      const clock = fixedClock('2025-01-01T00:00:00Z');
      const contenders = ['a', 'b', 'c', 'd'].map((owner, i) => lease(i % 2 ? log.two : log.one, owner, clock));

      const won = await Promise.all(contenders.map((c) => c.acquire()));

      expect(won.filter(Boolean)).to.have.length(1);
      const owner = contenders[won.indexOf(true)]!;
      const others = contenders.filter((c) => c !== owner);
      expect(await Promise.all(others.map((c) => c.acquire()))).to.deep.equal([false, false, false]);
      expect(await owner.renew()).to.equal(true);
    });

    it('hands over once the owner stopped renewing for the ttl, and refuses the paused owner’s writes', async function () {
      const clock = fixedClock('2025-01-01T00:00:00Z');
      const paused = lease(log.one, 'paused', clock);
      const next = lease(log.two, 'next', clock);
      expect(await paused.acquire()).to.equal(true);
      await paused.append([jobEvent(1)]);

      clock.advance(9_999);
      expect(await next.acquire(), 'before the lease expired').to.equal(false);
      clock.advance(1);
      expect(await next.acquire(), 'once it expired').to.equal(true);
      await next.append([jobEvent(2)]);

      const refused = await paused.append([jobEvent(3)]).catch((err: unknown) => err);
      expect(refused).to.be.instanceOf(LeaseLostError);
      expect((await log.one.readStream(`webhooks-${job}`)).map((e) => e.data)).to.deep.equal([{ n: 1 }, { n: 2 }]);
      expect(await paused.renew(), 'the paused owner’s renewal').to.equal(false);
    });

    it('fences every write of a job given the fenced store, single and multi-stream alike', async function () {
      const clock = fixedClock('2025-01-01T00:00:00Z');
      const paused = lease(log.one, 'paused', clock);
      const next = lease(log.two, 'next', clock);
      expect(await paused.acquire()).to.equal(true);
      const store = fencedEventStore(log.one, paused);
      await store.append(`webhooks-${job}`, [{ type: 'BatchDecided', data: { n: 1 } }]);

      clock.advance(10_000);
      expect(await next.acquire()).to.equal(true);

      const single = await store.append(`webhooks-${job}`, [{ type: 'BatchDecided', data: { n: 2 } }]).catch((err: unknown) => err);
      const many = await store.appendMany([jobEvent(3), { streamId: `alerts-${job}`, events: [{ type: 'AlertSent', data: {} }] }]).catch((err: unknown) => err);
      expect(single).to.be.instanceOf(LeaseLostError);
      expect(many).to.be.instanceOf(LeaseLostError);
      expect((await store.readStream(`webhooks-${job}`)).map((e) => e.data)).to.deep.equal([{ n: 1 }]);
      expect(await log.two.readStream(`alerts-${job}`)).to.deep.equal([]);
    });

    it('keeps the lease while the owner renews within the ttl', async function () {
      const clock = fixedClock('2025-01-01T00:00:00Z');
      const owner = lease(log.one, 'owner', clock);
      const other = lease(log.two, 'other', clock);
      expect(await owner.acquire()).to.equal(true);
      for (let i = 0; i < 5; i++) {
        clock.advance(6_000);
        expect(await owner.renew()).to.equal(true);
        expect(await other.acquire()).to.equal(false);
      }
      await owner.append([jobEvent(1)]);
      expect(await log.one.readStream(`webhooks-${job}`)).to.have.length(1);
    });

    it('refuses a paused owner’s write even before it noticed, when the fence is checked in the same append', async function () {
      const clock = fixedClock('2025-01-01T00:00:00Z');
      const paused = lease(log.one, 'paused', clock);
      expect(await paused.acquire()).to.equal(true);
      // Another owner whose clock runs past the expiry takes over while this one sleeps.
      const later = fixedClock('2025-01-01T00:00:11Z');
      expect(await lease(log.two, 'next', later).acquire()).to.equal(true);

      expect(paused.owned, 'the paused owner still believes it owns the job').to.equal(true);
      const refused = await paused.append([jobEvent(1)]).catch((err: unknown) => err);

      expect(refused).to.be.instanceOf(LeaseLostError);
      expect(await log.one.readStream(`webhooks-${job}`)).to.deep.equal([]);
      expect(paused.owned).to.equal(false);
    });

    it('lets the owner’s writes through while its own renewals move the fence', async function () {
      const owner = lease(log.one, 'owner', systemClock);
      expect(await owner.acquire()).to.equal(true);

      await Promise.all(Array.from({ length: 10 }, (_, n) => Promise.all([owner.append([jobEvent(n)]), owner.renew()])));

      expect(await log.one.readStream(`webhooks-${job}`)).to.have.length(10);
      expect(owner.fence).to.equal((await log.one.readStream(leaseStreamOf(job))).length - 1);
    });

    it('runs the job in one process of two, and in the other at once after a stop', async function () {
      const started: string[] = [];
      const stopped: string[] = [];
      const tries = new Map<string, number>();
      // A lease that would outlive the test: the other process can only take over because the first let go.
      const counted = (store: EventStore, owner: string) => {
        const l = lease(store, owner, systemClock, 3_600_000);
        const acquire = l.acquire.bind(l);
        l.acquire = () => (tries.set(owner, (tries.get(owner) ?? 0) + 1), acquire());
        return l;
      };
      const run = (store: EventStore, owner: string) =>
        runWhileOwned(
          counted(store, owner),
          () => {
            started.push(owner);
            return Promise.resolve({ stop: () => Promise.resolve(void stopped.push(owner)) });
          },
          { retryMs: 50, onError: (err) => expect.fail(String(err)) },
        );
      const a = run(log.one, 'a');
      const b = run(log.two, 'b');
      runs.push(a, b);

      await waitUntil(() => started.length > 0);
      const [first, second] = started[0] === 'a' ? [a, 'b'] : [b, 'a'];
      await waitUntil(() => (tries.get(second) ?? 0) >= 6, 60_000); // six tries of the other process, refused
      expect(started).to.have.length(1);

      const stoppedAt = performance.now();
      await first.stop();
      await waitUntil(() => started.length === 2, 60_000);

      expect(started[1]).to.equal(second);
      expect(stopped).to.deep.equal([started[0]]);
      console.log(`      hand-over after a stop: ${(performance.now() - stoppedAt).toFixed(0)} ms (retry every 50 ms)`);
    });


    it('starts the job elsewhere once a dead owner’s lease expired, not before', async function () {
      const ttlMs = 400;
      const dead = lease(log.one, 'dead', systemClock, ttlMs);
      const acquiredAt = Date.now(); // the lease expires ttl after the acquire was sent
      expect(await dead.acquire()).to.equal(true);
      let startedAt = 0;
      runs.push(
        runWhileOwned(
          lease(log.two, 'next', systemClock, ttlMs),
          () => {
            startedAt = Date.now();
            return Promise.resolve({ stop: () => Promise.resolve() });
          },
          { retryMs: 50, onError: (err) => expect.fail(String(err)) },
        ),
      );

      await waitUntil(() => startedAt > 0, 5_000);

      const handOverMs = startedAt - acquiredAt;
      expect(handOverMs).to.be.at.least(ttlMs);
      console.log(`      hand-over after a dead owner: ${handOverMs} ms (ttl ${ttlMs} ms, retry every 50 ms)`);
    });

    it('says `starting` until the lease is asked for and while the job it took starts, then `running` or `standby`', async function () {
      let started!: () => void;
      const starting = new Promise<void>((resolve) => (started = resolve));
      const firstLease = lease(log.one, 'first', systemClock);
      const first = runWhileOwned(firstLease, async () => {
        await starting;
        return { stop: () => Promise.resolve() };
      }, { onError: (err) => expect.fail(String(err)) });
      runs.push(first);
      expect(first.state).to.equal('starting');
      // Until the lease is taken (not a fixed pause: a busy machine's first append may be slow).
      await waitUntil(() => firstLease.owned, 5_000);
      expect(first.state, 'lease taken, job still starting').to.equal('starting');
      const second = runWhileOwned(lease(log.two, 'second', systemClock), () => Promise.resolve({ stop: () => Promise.resolve() }), { onError: (err) => expect.fail(String(err)) });
      runs.push(second);
      expect(second.state).to.equal('starting');
      await waitUntil(() => second.state !== 'starting', 5_000);
      expect(second.state).to.equal('standby');
      started();
      await waitUntil(() => first.state === 'running', 5_000);
      expect(first.owned).to.equal(true);
    });

    it('stops the job when a renewal finds the lease taken', async function () {
      const changes: boolean[] = [];
      let jobStopped = false;
      const run = runWhileOwned(
        lease(log.one, 'owner', systemClock, 60_000),
        () => Promise.resolve({ stop: () => Promise.resolve(void (jobStopped = true)) }),
        { renewMs: 50, onError: (err) => expect.fail(String(err)), onOwnerChange: (owned) => changes.push(owned) },
      );
      runs.push(run);
      await waitUntil(() => run.owned);

      // An owner whose clock is past the expiry (the owner's process was paused) takes over.
      const thief = lease(log.two, 'thief', fixedClock(new Date(Date.now() + 61_000)), 60_000);
      // It may lose a race with a renewal: it tries again, as a runner would.
      for (let tries = 0; !(await thief.acquire()); tries++) expect(tries).to.be.below(50);
      await waitUntil(() => jobStopped, 5_000);

      expect(run.owned).to.equal(false);
      expect(changes).to.deep.equal([true, false]);
    });
  });
}

describe('Job leases', function () {
  jobLeaseSuite('SQLite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scores-lease-'));
    const dbs = [openSqlite(join(dir, 'events.db')), openSqlite(join(dir, 'events.db'))];
    const [one, two] = dbs.map((db) => new SqliteEventStore(db, systemClock)) as [SqliteEventStore, SqliteEventStore];
    return {
      one,
      two,
      cleanup: async () => {
        await one.close();
        await two.close();
        for (const db of dbs) db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });

  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs on PostgreSQL when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  for (const positions of ['serialised', 'fenced'] as const) {
    jobLeaseSuite(`PostgreSQL (${positions} positions)`, async () => {
      const schema = `t_lease_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const one = new PostgresEventStore(url, systemClock, { schema, positions });
      const two = new PostgresEventStore(url, systemClock, { schema, positions });
      return {
        one,
        two,
        cleanup: async () => {
          await one.close();
          await two.close();
          const admin = await pgSession(url);
          await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await admin.end();
        },
      };
    });
  }
});
