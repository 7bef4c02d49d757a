import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth } from '../../queries/audit-ledger/ledger-month.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { tempDir, testEnv } from '../support/server.js';

type Debited = Extract<LedgerEvent, { type: 'CreditsDebited' }>;
const isDebit = (e: LedgerEvent): e is Debited => e.type === 'CreditsDebited';

/**
 * A month ends while calls are being charged: the calls decided before the boundary are May's,
 * those after it June's; none is lost or drawn twice, May closes with the state it ended in, and
 * the prepaid credits left are carried into June.
 */
describe('A month boundary in the middle of concurrent spending', function () {
  this.timeout(60_000);
  const clock = fixedClock('2024-05-31T23:59:58Z');
  let dir: string;
  let s: Services;
  let account: string;
  const answered = new Map<string, 'ok' | 'refused'>();

  before(async () => {
    dir = tempDir('scores-month-boundary-');
    s = await openServices(loadConfig(testEnv(dir, '2024-05-31T23:59:58Z', { SCORES_DEMO: 'off' })), { clock });
    ({ account_id: account } = await createAccountWithKey(s, { tier: 'free' }));
    await s.ledger.buyPack(account, { packId: 'pack-1', credits: 300 });
    // 1,000 credits of allowance and 300 prepaid: May can pay for 650 calls of 2 credits.
    const call = async (i: number) => {
      try {
        await s.ledger.debit(account, { request_id: `req_${i}`, endpoint: 'scores', channel: 'rest', cost: 2 });
        answered.set(`req_${i}`, 'ok');
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'credits_exhausted')) throw err;
        answered.set(`req_${i}`, 'refused');
      }
    };
    const may = Array.from({ length: 700 }, (_, i) => call(i));
    // The clock crosses midnight while May's calls are still queued and being appended.
    await new Promise((r) => setImmediate(r));
    clock.set('2024-06-01T00:00:01Z');
    const june = Array.from({ length: 300 }, (_, i) => call(700 + i));
    await Promise.all([...may, ...june]);
    await s.runner.start();
  });
  after(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records every answered call once and no refused one', async () => {
    const events = ((await s.events.readStream(ledgerStream(account))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
    const debits = events.filter(isDebit).map((e) => e.data.request_id);
    expect(new Set(debits).size).to.equal(debits.length);
    const ok = [...answered].filter(([, a]) => a === 'ok').map(([id]) => id);
    expect(debits.sort()).to.deep.equal(ok.sort());
    expect(answered.size).to.equal(1_000);
  });

  it('closes May with the state it ended in, carries the prepaid left into June, and draws June from a fresh allowance', async () => {
    // Line by line: the calls of a batch are lines of their own.
    const events = ((await s.events.readStream(ledgerStream(account))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
    const closing = events.findIndex((e) => e.type === 'LedgerPeriodClosed');
    expect(closing).to.be.greaterThan(0);
    const may = foldLedger(events.slice(0, closing));
    const carried = (events[closing] as Extract<LedgerEvent, { type: 'LedgerPeriodClosed' }>).data.carried;
    expect(carried).to.deep.include({ period: '2024-05', prepaid: may.prepaid, used_allowance: may.used_allowance });
    const mayDebits = events.slice(0, closing).filter(isDebit);
    expect(mayDebits.reduce((n, e) => n + e.data.from_allowance, 0)).to.equal(may.used_allowance);
    expect(may.used_allowance).to.be.at.most(1_000);
    expect(300 - mayDebits.reduce((n, e) => n + e.data.from_prepaid, 0)).to.equal(may.prepaid);
    expect(events[closing + 1]).to.deep.include({ type: 'AllowancePeriodOpened' });
    const june = foldLedger(events);
    expect(june.period).to.equal('2024-06');
    const juneDebits = events.slice(closing).filter(isDebit);
    expect(mayDebits.length, 'calls charged in May').to.be.greaterThan(0);
    expect(juneDebits.length, 'calls charged in June').to.be.greaterThan(0);
    expect(juneDebits.every((e) => e.data.period === '2024-06')).to.equal(true);
    expect(june.used_allowance).to.equal(juneDebits.reduce((n, e) => n + e.data.from_allowance, 0));
    expect(june.prepaid).to.equal(may.prepaid - juneDebits.reduce((n, e) => n + e.data.from_prepaid, 0));
  });

  it('passes the audit, whole and month by month', async () => {
    await s.runner.waitForHead();
    const deps = { events: s.events, reads: s.reads, accountId: account };
    const whole = await auditAccount(deps);
    expect(whole.ok, whole.problems.join('\n')).to.equal(true);
    for (const month of ['2024-05', '2024-06']) {
      const report = await auditMonth({ ...deps, month });
      expect(report.ok, `${month}: ${report.problems.join('\n')}`).to.equal(true);
    }
  });
});
