import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { systemClock } from '../../src/core/clock.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { AppError, ConcurrencyError } from '../../src/core/errors.js';
import type { DebitCredits } from '../../src/domain/ledger/ledger.commands.js';
import { ledgerSnapshots } from '../../src/domain/ledger/ledger-snapshot.js';
import { spentAt } from '../../src/domain/ledger/key-spend.js';
import { chargedByKey } from '../support/key-budget-race.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-03-15T12:00:00Z';
const LIMIT = 300;

const debit = (key: string, n: number, cost: number, budget = true): DebitCredits => ({
  type: 'DebitCredits',
  data: { request_id: `req_${key}_${n}`, endpoint: 'screener', channel: n % 2 ? 'mcp' : 'rest', cost, key_id: key, ...(budget ? { key_budget: { daily: LIMIT, monthly: null } } : {}) },
});

/**
 * Three times the key's daily limit, in 3-credit debits from two ledger services (two replicas)
 * 40 in flight, with a second key of the account spending beside it: exactly the limit charged to
 * the limited key, every other debit of it refused with key_budget_exhausted, the other key's all charged.
 */
async function overspendFromTwoWriters(events: EventStore, s: Services): Promise<void> {
  const { account_id: account } = await createAccountWithKey({ ...s, events }, { tier: 'quant' });
  const writers = [new LedgerService(events, s.clock), new LedgerService(events, s.clock)];
  const calls = (3 * LIMIT) / 3;
  const outcomes = await Promise.all(
    Array.from({ length: calls + 40 }, (_, i) => {
      const command = i < calls ? debit('key_limited', i, 3) : debit('key_other', i, 5, false);
      return writers[i % 2]!.execute(account, command).then(
        () => 'ok',
        (err: unknown) => (err instanceof AppError ? err.code : err instanceof ConcurrencyError ? 'conflict' : String(err)),
      );
    }),
  );
  const limited = outcomes.slice(0, calls);
  expect(limited.filter((o) => o !== 'ok' && o !== 'key_budget_exhausted')).to.deep.equal([]);
  expect(limited.filter((o) => o === 'ok')).to.have.length(LIMIT / 3);
  expect(outcomes.slice(calls)).to.deep.equal(Array.from({ length: 40 }, () => 'ok'));
  const charged = await chargedByKey(events, account);
  expect(charged.get('key_limited')).to.equal(LIMIT);
  expect(charged.get('key_other')).to.equal(200);
  // A third replica, started now, folds the same spend from the log.
  const spend = await new LedgerService(events, s.clock).keySpend(account);
  expect(spentAt(spend, 'key_limited', NOW)).to.deep.equal({ today: LIMIT, month: LIMIT });
}

describe('Key credit limits on the ledger service', function () {
  this.timeout(180_000);
  let dir: string;
  let s: Services;

  before(async () => {
    dir = tempDir('scores-key-budget-');
    s = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })));
    await s.reads.register([ledgerSnapshots]);
  });

  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never charges a key past its limit from two replicas on the embedded log, and leaves its other keys alone', async () => {
    await overspendFromTwoWriters(s.events, s);
  });

  it('does the same on the PostgreSQL log', async function () {
    const url = process.env['POSTGRES_URL'];
    if (!url) return this.skip(); // runs when POSTGRES_URL is set (npm run engines prints it)
    const store = new PostgresEventStore(url, systemClock, { schema: `key_budget_${randomUUID().replaceAll('-', '').slice(0, 10)}` });
    try {
      await overspendFromTwoWriters(store, s);
    } finally {
      await store.close();
    }
  });

  it('keeps the spend across a restart from a snapshot, and folds the stream whole past a snapshot written before key limits', async () => {
    const { account_id: account } = await createAccountWithKey(s, { tier: 'quant' });
    const every = 10;
    const first = new LedgerService(s.events, s.clock, { snapshots: s.reads, snapshotEvery: every });
    for (let i = 0; i < 2 * every; i++) await first.execute(account, debit('key_snap', i, 10));
    const snapshot = () => s.reads.get(ledgerSnapshots, account);
    await until(async () => ((await snapshot())?.revision ?? -1) >= every, 5_000);
    expect(spentAt((await snapshot())!.key_spend!, 'key_snap', NOW).today).to.be.at.least(every * 10);

    const restarted = new LedgerService(s.events, s.clock, { snapshots: s.reads, snapshotEvery: every });
    for (let i = 2 * every; i < LIMIT / 10; i++) await restarted.execute(account, debit('key_snap', i, 10));
    const refused = await restarted.execute(account, debit('key_snap', 999, 10)).catch((err: AppError) => err);
    expect((refused as AppError).code).to.equal('key_budget_exhausted');
    expect((refused as AppError).extensions['spent']).to.equal(LIMIT);

    // A snapshot without key spend (as written before key limits) is not where a fold starts.
    const { key_spend: _dropped, ...old } = (await snapshot())!;
    await s.reads.commit({ writes: [{ op: 'upsert', collection: ledgerSnapshots.name, id: account, doc: old }], checkpoints: {} });
    const fromOld = new LedgerService(s.events, s.clock, { snapshots: s.reads, snapshotEvery: every });
    expect(spentAt(await fromOld.keySpend(account), 'key_snap', NOW).today).to.equal(LIMIT);
    expect(await fromOld.quote(account, debit('key_snap', 1000, 10)).catch((err: AppError) => err)).to.include({ code: 'key_budget_exhausted' });
  });
});
