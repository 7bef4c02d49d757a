/**
 * The upcoming invoice the account page shows is the invoice the month gets: a month driven with
 * usage into overage, a credit pack, an upgrade and the Pro membership, previewed along the way
 * and on its last second, then closed by the next month's first call and invoiced as
 * test/integration/billing.test.ts does. The preview's lines, total and amount due equal the
 * issued invoice's, and a month without an event yet previews its plan alone.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { buyPack, upgradePlan, upgradeQuote, type BillingDeps } from '../../commands/billing/billing.handler.js';
import { issueInvoice } from '../../commands/billing/invoice.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { getUpcomingInvoice, type UpcomingInvoice } from '../../queries/get-upcoming-invoice/get-upcoming-invoice.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { tempDir, testEnv } from '../support/server.js';

describe('Upcoming invoice: the preview equals the invoice issued when the month closes', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: ReturnType<typeof fixedClock>;
  let dir: string;
  let account: string;
  let deps: BillingDeps;
  let requests = 0;
  const debit = (cost: number) => s.ledger.debit(account, { request_id: `req_upcoming_${++requests}`, endpoint: 'scores', channel: 'rest', cost });
  const preview = async (): Promise<UpcomingInvoice> => {
    await s.runner.waitForHead();
    return getUpcomingInvoice(s.reads, s.events, account, clock.now());
  };
  const kinds = (p: { lines: { kind: string }[] }) => p.lines.map((l) => l.kind);

  before(async () => {
    dir = tempDir('scores-upcoming-');
    clock = fixedClock('2024-03-20T09:00:00Z');
    s = await openServices(loadConfig(testEnv(dir, '2024-03-20T09:00:00Z', { SCORES_DEMO: 'off' })), { clock });
    await s.runner.start();
    deps = { ledger: s.ledger, billing: s.billing, clock, events: s.events, returnUrl: 'http://localhost/account' };
    ({ account_id: account } = await createAccountWithKey(s, { tier: 'hobbyist', email: 'preview@example.com' }));
    await s.ledger.switchOverage(account, true);
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('previews a month with no event yet as its plan alone, before the first call opens it', async () => {
    clock.set('2024-04-01T00:00:05Z');
    const april = await preview();
    expect(april).to.include({ period: '2024-04', total_cents: 1_900, paid_cents: 0, due_cents: 1_900, closes_at: '2024-05-01T00:00:00.000Z' });
    expect(kinds(april)).to.deep.equal(['plan']);
    expect(april.lines[0]!.description).to.equal('Hobbyist plan, April 2024');
  });

  it('adds the pack, the overage and the upgrade as they happen', async () => {
    clock.set('2024-04-05T10:00:00Z');
    await debit(20_000);
    clock.set('2024-04-08T10:00:00Z');
    await buyPack(deps, account, 'pack-10k', 'purchase-upcoming-1');
    clock.set('2024-04-10T10:00:00Z');
    // 5,000 from the allowance, 10,000 from the pack, 3,000 in overage at $0.50 per 1,000.
    await debit(18_000);
    const before = await preview();
    expect(kinds(before)).to.deep.equal(['plan', 'pack', 'overage']);
    expect(before.total_cents).to.equal(1_900 + 500 + 150);
    expect(before.due_cents).to.equal(1_900 + 150);

    clock.set('2024-04-15T10:00:00Z');
    const upgrade = await upgradeQuote(deps, account, 'builder');
    await upgradePlan(deps, account, 'builder', upgrade.amount_cents);
    // (No Pro membership here: it is sold only where it adds to the plan, on free.)
    clock.set('2024-04-20T10:00:00Z');
    await debit(1_000);
    const after = await preview();
    expect(kinds(after)).to.deep.equal(['plan', 'pack', 'proration', 'overage']);
    expect(after.lines.find((l) => l.kind === 'proration')!.amount_cents).to.equal(upgrade.amount_cents);
    expect(after.paid_cents).to.equal(500 + upgrade.amount_cents);
  });

  it('previews on the month’s last second exactly the invoice issued once May’s first call closed April', async () => {
    clock.set('2024-04-30T23:59:59Z');
    await debit(2_000);
    const last = await preview();

    clock.set('2024-05-01T00:00:01Z');
    await debit(1);
    await s.runner.waitForHead();
    const { invoice } = await issueInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock }, account, '2024-04');
    expect(invoice.period).to.equal(last.period);
    expect(invoice.lines).to.deep.equal(last.lines);
    expect(invoice.total_cents).to.equal(last.total_cents);
    const [issued] = await s.events.readStream(invoicesStream(account));
    expect((issued!.data as { due_cents: number }).due_cents).to.equal(last.due_cents);
  });

  it('previews May from its own events: the builder plan, nothing of April', async () => {
    const may = await preview();
    expect(may).to.include({ period: '2024-05', total_cents: 9_900, paid_cents: 0 });
    expect(kinds(may)).to.deep.equal(['plan']);
  });
});
