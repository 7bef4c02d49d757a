import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { dropLedgerSnapshots } from '../../commands/ledger/drop-snapshots.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { EventStore, ReadStreamOptions } from '../../src/core/event-store.port.js';
import { ledgerSnapshots, type LedgerSnapshot } from '../../src/domain/ledger/ledger-snapshot.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

/**
 * Ledger snapshots: the first decision after a restart folds the snapshot and the events after
 * it, not the account's whole history. A snapshot is a cache: anchored to the log by the hash of
 * the event it ends at, ignored when it is not, never trusted by the audit.
 */
describe('Ledger snapshots', function () {
  this.timeout(60_000);
  const EVERY = 10;
  let dir: string;
  let s: Services;
  let account: string;

  /** A ledger service as a restarted process has it: empty caches, the same stores. */
  const restarted = (events: EventStore = s.events, snapshots = true) =>
    new LedgerService(events, s.clock, snapshots ? { snapshots: s.reads, snapshotEvery: EVERY } : {});
  const stream = () => s.events.readStream(ledgerStream(account));
  const snapshotOf = () => s.reads.get(ledgerSnapshots, account);
  const putSnapshot = (doc: LedgerSnapshot) =>
    s.reads.commit({ writes: [{ op: 'upsert', collection: ledgerSnapshots.name, id: account, doc }], checkpoints: {} });

  before(async () => {
    dir = tempDir('scores-ledger-snapshots-');
    s = await openServices(loadConfig(testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' })));
    await s.reads.register([ledgerSnapshots]);
    ({ account_id: account } = await createAccountWithKey(s, { tier: 'hobbyist' }));
    const ledger = restarted();
    for (let i = 0; i < 25; i++) await ledger.debit(account, { request_id: `req_${i}`, endpoint: 'scores', channel: 'rest', cost: 2 });
    await until(async () => ((await snapshotOf())?.revision ?? -1) >= 2 * EVERY - 1, 5_000);
  });
  after(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes one every few events, equal to the fold of the log up to the event it ends at', async () => {
    const snapshot = (await snapshotOf())!;
    const events = await stream();
    expect(events.length).to.be.greaterThan(25);
    expect(snapshot.revision).to.be.at.least(2 * EVERY - 1);
    const upTo = events.filter((e) => e.revision <= snapshot.revision) as unknown as LedgerEvent[];
    expect(snapshot.state).to.deep.equal(foldLedger(upTo));
    expect(snapshot.state.last_hash).to.equal((upTo[upTo.length - 1]!.data as { hash: string }).hash);
    expect(snapshot.position).to.equal(events[snapshot.revision]!.position);
  });

  it('lets a restarted service start from it: only the events after it are read, and the state is the whole fold', async () => {
    const reads: ReadStreamOptions[] = [];
    const spied: EventStore = Object.create(s.events, {
      readStream: { value: (id: string, options?: ReadStreamOptions) => (reads.push(options ?? {}), s.events.readStream(id, options)) },
    }) as EventStore;
    const snapshot = (await snapshotOf())!;
    const state = await restarted(spied).state(account);
    expect(state).to.deep.equal(foldLedger(await stream()));
    expect(reads.map((r) => r.fromRevision ?? 0)).to.deep.equal([snapshot.revision, snapshot.revision + 1]);
  });

  it('decides exactly as without it: the same state, and the next debit draws the same credits', async () => {
    const withSnapshot = restarted();
    const without = restarted(s.events, false);
    expect(await withSnapshot.state(account)).to.deep.equal(await without.state(account));
    const a = await withSnapshot.debit(account, { request_id: 'req_a', endpoint: 'scores', channel: 'rest', cost: 2 });
    const b = await without.debit(account, { request_id: 'req_b', endpoint: 'scores', channel: 'rest', cost: 2 });
    expect(b.state.used_allowance - a.state.used_allowance).to.equal(2);
    expect(await restarted().state(account)).to.deep.equal(await restarted(s.events, false).state(account));
  });

  it('is ignored when it is not anchored to the log (the hash at its revision differs), so a forged balance is never used', async () => {
    const good = (await snapshotOf())!;
    await putSnapshot({ ...good, state: { ...good.state, prepaid: 1_000_000, last_hash: 'f'.repeat(64) } });
    try {
      const state = await restarted().state(account);
      expect(state.prepaid).to.equal(0);
      expect(state).to.deep.equal(foldLedger(await stream()));
    } finally {
      await putSnapshot(good);
    }
  });

  it('is checked by the audit: ok when it equals the log, reported when its state differs though its hash holds', async () => {
    await s.runner.start();
    const good = (await snapshotOf())!;
    const intact = await auditAccount({ events: s.events, reads: s.reads, accountId: account });
    expect(intact.snapshot).to.include({ status: 'ok', revision: good.revision });
    expect(intact.ok, intact.problems.join('\n')).to.equal(true);

    await putSnapshot({ ...good, state: { ...good.state, prepaid: 500 } });
    try {
      const tampered = await auditAccount({ events: s.events, reads: s.reads, accountId: account });
      expect(tampered.ok).to.equal(false);
      expect(tampered.snapshot.status).to.equal('differs');
      expect(tampered.problems.join('\n')).to.match(/ledger snapshot at revision \d+: state\.prepaid is 500, the log gives 0/);
    } finally {
      await putSnapshot(good);
    }
  });

  it('is only a cache: with it dropped (scores ledger drop-snapshot), a restarted service folds the whole stream to the same state', async () => {
    const before = await restarted().state(account);
    expect(await dropLedgerSnapshots(s.reads, 'acc-unknown')).to.equal(0);
    expect(await dropLedgerSnapshots(s.reads, account)).to.equal(1);
    expect(await snapshotOf()).to.equal(null);
    expect(await dropLedgerSnapshots(s.reads, account)).to.equal(0);
    expect(await restarted().state(account)).to.deep.equal(before);
  });

  it('is dropped for every account with --all, and taken again from the log', async () => {
    const other = (await createAccountWithKey(s, { tier: 'hobbyist' })).account_id;
    const ledger = restarted();
    for (let i = 0; i < EVERY + 2; i++) await ledger.debit(other, { request_id: `req_o${i}`, endpoint: 'scores', channel: 'rest', cost: 2 });
    await until(async () => (await s.reads.get(ledgerSnapshots, other)) !== null, 5_000);
    expect(await dropLedgerSnapshots(s.reads, null)).to.be.at.least(1);
    expect(await s.reads.get(ledgerSnapshots, other)).to.equal(null);
    const again = restarted();
    for (let i = 0; i < EVERY + 2; i++) await again.debit(other, { request_id: `req_p${i}`, endpoint: 'scores', channel: 'rest', cost: 2 });
    await until(async () => (await s.reads.get(ledgerSnapshots, other)) !== null, 5_000);
    const taken = (await s.reads.get(ledgerSnapshots, other))!;
    expect(taken.state).to.deep.equal(foldLedger((await s.events.readStream(ledgerStream(other))).filter((e) => e.revision <= taken.revision)));
  });
});
