import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { usageProjection } from '../../projections/usage/usage.projection.js';
import { usageDays, usageDaysProjection } from '../../projections/usage-days/usage-days.projection.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import type { Projection } from '../../src/core/projection.js';
import type { CommitBatch, ReadStore } from '../../src/core/read-store.port.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { runLedger } from '../support/ledger-script.js';
import { tempDir, testEnv } from '../support/server.js';

const ACCOUNTS = ['acc-cut-a', 'acc-cut-b'];

const debit = (n: number): LedgerCommand => ({ type: 'DebitCredits', data: { request_id: `r-${n}`, endpoint: 'divergence', channel: 'rest', cost: 2 } });

/** A month of calls made one at a time (ranges of debits), then the next month's first calls. */
function script(accountId: string): [LedgerCommand, string][] {
  const out: [LedgerCommand, string][] = [[{ type: 'OpenLedger', data: { account_id: accountId, tier: 'hobbyist', pro: false } }, '2024-05-02T08:00:00Z']];
  for (let i = 0; i < 24; i++) out.push([debit(i), `2024-05-${String(3 + i).padStart(2, '0')}T10:00:00Z`]);
  for (let i = 24; i < 30; i++) out.push([debit(i), `2024-06-0${i - 22}T10:00:00Z`]);
  return out;
}

/** Events per batch: the first commit lands whole, the second is the one cut short. */
const BATCH = 20;

/**
 * The read store as MongoDB without a transaction (FerretDB) leaves it when the process dies in
 * the middle of a commit: the first commit landed, then only the first `cutAfter` writes of the
 * second, in order, and not its checkpoint. (A cut in the very first commit is no test: with no
 * checkpoint stored, a restart rebuilds the read models from nothing.)
 */
function cutShort(inner: ReadStore, cutAfter: number, seen: { writes: number }): ReadStore {
  let commits = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'commit') return Reflect.get(target, prop, receiver) as unknown;
      return async (batch: CommitBatch) => {
        if (++commits === 1) return target.commit(batch);
        seen.writes = Math.max(seen.writes, batch.writes.length);
        await target.commit({ writes: batch.writes.slice(0, cutAfter), checkpoints: {} });
        throw new Error(`process killed after ${cutAfter} of ${batch.writes.length} writes`);
      };
    },
  });
}

describe('A projection commit cut short (a store without transactions, killed mid-commit)', function () {
  this.timeout(120_000);
  let dir: string;
  let services: Services;

  before(async () => {
    dir = tempDir('scores-cut-commit-');
    services = await openServices(loadConfig(testEnv(dir, '2024-06-15T12:00:00Z', { SCORES_DEMO: 'off' })));
    await services.reads.register([...usageProjection.collections, ...usageDaysProjection.collections]);
    for (const account of ACCOUNTS) await runLedger(services.events, account, script(account));
  });

  after(async () => {
    await services?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cutThenResume(cutAfter: number, seen: { writes: number }, projection: Projection = usageProjection): Promise<void> {
    await services.reads.reset(projection.collections.map((c) => c.name), [projection.name]);
    const dying = new ProjectorRunner(services.events, cutShort(services.reads, cutAfter, seen), [projection], { batchSize: BATCH });
    await dying.start().catch(() => undefined);
    await dying.stop();
    const resumed = new ProjectorRunner(services.events, services.reads, [projection], { batchSize: BATCH });
    await resumed.start();
    await resumed.waitForHead();
    await resumed.stop();
  }

  const daysOf = async () => {
    const docs = [];
    for await (const doc of services.reads.scan(usageDays)) docs.push(doc);
    return docs;
  };

  it('the usage read models equal the replay after a restart, wherever the commit stopped', async () => {
    const seen = { writes: 0 };
    await cutThenResume(0, seen);
    // Every place the second commit can stop: after 1, 2, … of its writes, up to all but the checkpoint.
    expect(seen.writes, 'writes in the second commit').to.be.greaterThan(4);
    for (let cutAfter = 1; cutAfter <= seen.writes; cutAfter++) {
      await cutThenResume(cutAfter, { writes: 0 });
      for (const accountId of ACCOUNTS) {
        const report = await auditAccount({ events: services.events, reads: services.reads, accountId });
        expect(report.problems, `cut after ${cutAfter} of ${seen.writes} writes, ${accountId}`).to.deep.equal([]);
        expect(report.not_yet_projected).to.equal(0);
      }
    }
  });

  it('the usage days count each call once after a restart, wherever the commit stopped', async () => {
    const seen = { writes: 0 };
    await cutThenResume(Number.MAX_SAFE_INTEGER, seen, usageDaysProjection);
    const whole = await daysOf();
    // One call a day, 2 credits each: 30 days for each account.
    expect(whole.filter((d) => d.calls === 1 && d.credits === 2)).to.have.length(30 * ACCOUNTS.length);
    expect(seen.writes, 'writes in the second commit').to.be.greaterThan(4);
    for (let cutAfter = 1; cutAfter <= seen.writes; cutAfter++) {
      await cutThenResume(cutAfter, { writes: 0 }, usageDaysProjection);
      expect(await daysOf(), `cut after ${cutAfter} of ${seen.writes} writes`).to.deep.equal(whole);
    }
  });
});
