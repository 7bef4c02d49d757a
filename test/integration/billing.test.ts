import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { buyPack, downgradePlan, endPro, proQuote, startPro, upgradePlan, upgradeQuote, type BillingDeps, type Purchased } from '../../commands/billing/billing.handler.js';
import { issueInvoice, type InvoiceDeps } from '../../commands/billing/invoice.handler.js';
import { startInvoiceIssuer } from '../../commands/billing/invoice.reactor.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { invoiceMonths, invoices } from '../../projections/invoices/invoices.projection.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { Billing, InvoicePayment, PaymentOutcome, PaymentRequest, PurchasePayment } from '../../src/core/billing.port.js';
import type { LedgerOutcome } from '../../src/domain/ledger/ledger.commands.js';
import { fixedClock } from '../../src/core/clock.js';
import { AppError, type ErrorCode } from '../../src/core/errors.js';
import type { Invoice } from '../../src/domain/billing/invoice.js';
import { stateAt } from '../../src/domain/ledger/ledger.figures.js';
import { PLANS, PRO_MONTHLY_PRICE_USD, type Tier } from '../../src/domain/plans.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { tempDir, testEnv } from '../support/server.js';

/** The invoice `issueInvoice` returns, whether it issued it now or earlier. */
const issuedInvoice = async (...args: Parameters<typeof issueInvoice>) => (await issueInvoice(...args)).invoice;


// ----- helpers --------------------------------------------------------------------------------

type Of<T extends LedgerEvent['type']> = Extract<LedgerEvent, { type: T }>;
type Clock = ReturnType<typeof fixedClock>;

/** Real services on a temp SQLite directory, with a clock the test moves; read models followed live. */
async function open(prefix: string, now: string): Promise<{ s: Services; clock: Clock; dir: string }> {
  const dir = tempDir(prefix);
  const clock = fixedClock(now);
  const s = await openServices(loadConfig(testEnv(dir, now, { SCORES_DEMO: 'off' })), { clock });
  await s.runner.start();
  return { s, clock, dir };
}

type Charge = Pick<PaymentRequest, 'account_id' | 'amount_cents' | 'description' | 'idempotency_key'> & { payment_ref: string };

/** Every payment (a purchase's, an invoice's) and refund asked of the Billing port, delegated to the real (embedded) adapter. */
class RecordingBilling implements Billing {
  readonly charges: Charge[] = [];
  readonly refunds: Array<{ payment_ref: string; reason: string }> = [];
  readonly processor = null;
  readonly checkoutOrigins = [];
  readonly webhooks = null;
  constructor(private readonly inner: Billing) {}
  get simulated(): boolean {
    return this.inner.simulated;
  }
  createCustomer(accountId: string): Promise<string | null> {
    return this.inner.createCustomer(accountId);
  }
  async pay(request: PurchasePayment): Promise<PaymentOutcome> {
    const paid = await this.inner.pay(request);
    if (paid.status === 'paid') this.charges.push({ account_id: request.account_id, amount_cents: request.amount_cents, description: request.description, idempotency_key: request.idempotency_key, payment_ref: paid.payment_ref });
    return paid;
  }
  async chargeInvoice(invoice: InvoicePayment): Promise<{ payment_ref: string | null; paid: boolean }> {
    const charged = await this.inner.chargeInvoice(invoice);
    const amount = invoice.total_cents - invoice.paid_cents;
    if (charged.payment_ref) this.charges.push({ account_id: invoice.account_id, amount_cents: amount, description: `Invoice for ${invoice.period}`, idempotency_key: invoice.idempotency_key, payment_ref: charged.payment_ref });
    return charged;
  }
  async refund(paymentRef: string, reason: string): Promise<void> {
    this.refunds.push({ payment_ref: paymentRef, reason });
    await this.inner.refund(paymentRef, reason);
  }
  portalUrl(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

/** The ledger's outcome of a purchase the embedded billing paid at once (never a redirect). */
function paid(outcome: Purchased): LedgerOutcome {
  if ('redirect' in outcome) throw new Error(`the embedded billing sent the customer to ${outcome.redirect}`);
  return outcome;
}

/** The account's ledger as raw events from the log, a batch of calls as its lines. */
async function ledgerOfAccount(s: Services, account: string): Promise<LedgerEvent[]> {
  return ((await s.events.readStream(ledgerStream(account))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
}
const ofType = <T extends LedgerEvent['type']>(events: LedgerEvent[], type: T): Of<T>[] => events.filter((e): e is Of<T> => e.type === type);

/** The AppError a promise rejects with; fails when it resolves or rejects with anything else. */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  expect.fail('expected an AppError refusal');
}
async function expectRefused(p: Promise<unknown>, code: ErrorCode): Promise<AppError> {
  const err = await refusal(p);
  expect(err.code, err.message).to.equal(code);
  return err;
}

let requests = 0;
/** A metered call: the first decision of a new month records the closing of the month before. */
const debit = (s: Services, account: string, cost = 1) => s.ledger.debit(account, { request_id: `req_billing_${++requests}`, endpoint: 'scores', channel: 'rest', cost });

const cents = (usd: number) => Number((usd * 100).toFixed(0));
const planCents = (tier: Tier) => cents(PLANS[tier].monthly_price_usd!);
/** The brief's proration, written out: days left including today / days in month × monthly difference, rounded. */
const prorated = (differenceCents: number, daysLeft: number, daysInMonth: number) => Math.round((differenceCents * daysLeft) / daysInMonth);

/**
 * What the ledger recorded as charged for `period`, from its raw events alone: the plan (and Pro)
 * at the tier the month started on, every ProrationCharged, every priced PackPurchased, and the
 * overage its closing event carries.
 */
function chargesRecorded(events: LedgerEvent[], period: string) {
  let tier: Tier | null = null;
  let pro = false;
  let inMonth = false;
  let start: { tier: Tier; pro: boolean } | null = null;
  const prorations: number[] = [];
  const packs: number[] = [];
  let overage = 0;
  let closed = false;
  for (const e of events) {
    if (e.type === 'LedgerOpened') ({ tier, pro } = e.data);
    if (e.type === 'PlanChanged') tier = e.data.tier;
    if (e.type === 'ProMembershipChanged') pro = e.data.pro;
    if (e.type === 'AllowancePeriodOpened' && e.data.period === period) {
      inMonth = true;
      start = { tier: tier!, pro };
    }
    if (!inMonth) continue;
    if (e.type === 'ProrationCharged') prorations.push(e.data.amount_cents);
    if (e.type === 'PackPurchased' && e.data.price_cents !== undefined) packs.push(e.data.price_cents);
    if (e.type === 'LedgerPeriodClosed' && e.data.period === period) {
      overage = Math.round(e.data.carried.overage_micro_usd / 10_000);
      closed = true;
      break;
    }
  }
  expect(start, `the ledger opened ${period}`).to.not.equal(null);
  expect(closed, `the ledger closed ${period}`).to.equal(true);
  const plan = planCents(start!.tier);
  const proFee = start!.pro ? cents(PRO_MONTHLY_PRICE_USD) : 0;
  const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
  return { start: start!, plan, pro: proFee, prorations, packs, overage, total: plan + proFee + sum(prorations) + sum(packs) + overage };
}

const sumOfLines = (inv: Invoice) => inv.lines.reduce((n, l) => n + l.amount_cents, 0);
const linesOf = (inv: Invoice, kind: Invoice['lines'][number]['kind']) => inv.lines.filter((l) => l.kind === kind);

/**
 * Every payment the ledger records is a payment of its own, taken for exactly that amount and not
 * given back: a `payment_ref` names one payment.
 */
function expectPaymentsHonest(events: LedgerEvent[], billing: RecordingBilling) {
  const recorded = [
    ...ofType(events, 'ProrationCharged').map((e) => ({ ref: e.data.payment_ref, amount: e.data.amount_cents, what: `${e.data.kind} proration` })),
    ...ofType(events, 'PackPurchased')
      .filter((e) => e.data.price_cents !== undefined)
      .map((e) => ({ ref: e.data.payment_ref!, amount: e.data.price_cents!, what: `pack ${e.data.pack_id}` })),
  ];
  const refs = recorded.map((r) => r.ref);
  expect(new Set(refs).size, `each recorded purchase has a payment of its own: ${JSON.stringify(recorded)}`).to.equal(refs.length);
  for (const r of recorded) {
    const charges = billing.charges.filter((c) => c.payment_ref === r.ref);
    expect(charges.length, `${r.what}: a charge under ${r.ref}`).to.be.greaterThan(0);
    for (const c of charges) expect(c.amount_cents, `${r.what}: the payment ${r.ref} is for the amount recorded`).to.equal(r.amount);
    expect(
      billing.refunds.map((x) => x.payment_ref),
      `${r.what}: the payment ${r.ref} the ledger recorded as paid was refunded`,
    ).to.not.include(r.ref);
  }
}

// ----- upgrade, packs, invoices ---------------------------------------------------------------

describe('Self-serve billing: upgrade, credit packs and the month’s invoice', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  let account: string;
  let billing: RecordingBilling;
  let deps: BillingDeps;
  let invoiceDeps: InvoiceDeps;
  const APRIL_10 = '2024-04-10T12:00:00Z';
  // free → hobbyist on 10 April: (19 − 0) × 100 cents × 21/30 days.
  const UPGRADE = Math.round(((19 - 0) * 100 * 21) / 30);

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-', APRIL_10));
    billing = new RecordingBilling(s.billing);
    deps = { ledger: s.ledger, billing, clock, events: s.events, returnUrl: 'http://localhost/account' };
    invoiceDeps = { events: s.events, reads: s.reads, billing, clock };
    ({ account_id: account } = await createAccountWithKey(s, { tier: 'free', email: 'buyer@example.com' }));
    await debit(s, account, 10);
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('quotes the upgrade to hobbyist as (19 − 0) × 100 × 21/30 cents, rounded', async () => {
    expect(UPGRADE).to.equal(1_330);
    const quote = await upgradeQuote(deps, account, 'hobbyist');
    expect(quote).to.deep.equal({ days: 21, days_in_month: 30, monthly_difference_cents: 1_900, amount_cents: prorated(1_900, 21, 30) });
    expect(quote.amount_cents).to.equal(UPGRADE);
    // Other tiers from free, the same way.
    expect((await upgradeQuote(deps, account, 'builder')).amount_cents).to.equal(prorated(9_900, 21, 30));
    expect((await upgradeQuote(deps, account, 'quant')).amount_cents).to.equal(prorated(49_900, 21, 30));
  });

  it('refuses an upgrade to enterprise (not sold self-serve) with bad_request', async () => {
    await expectRefused(upgradeQuote(deps, account, 'enterprise'), 'bad_request');
    await expectRefused(upgradePlan(deps, account, 'enterprise', 0), 'bad_request');
  });

  it('refuses an upgrade confirmed at a wrong amount with conflict, charging and changing nothing', async () => {
    const before = await ledgerOfAccount(s, account);
    const stateBefore = await s.ledger.state(account);
    for (const wrong of [UPGRADE - 1, UPGRADE + 1, 1_900, 0]) {
      const err = await expectRefused(upgradePlan(deps, account, 'hobbyist', wrong), 'conflict');
      expect(err.extensions).to.deep.include({ amount_cents: UPGRADE });
    }
    expect(await ledgerOfAccount(s, account)).to.have.length(before.length);
    const after = await s.ledger.state(account);
    expect(after.tier).to.equal('free');
    expect(after.allowance).to.equal(stateBefore.allowance);
    expect(after.last_hash).to.equal(stateBefore.last_hash);
    expect(billing.charges).to.have.length(0);
  });

  it('upgrades at once: hobbyist tier and allowance now, PlanChanged + ProrationCharged with the amount and a payment_ref', async () => {
    expect((await s.ledger.state(account)).allowance).to.equal(PLANS.free.monthly_allowance);
    const before = (await ledgerOfAccount(s, account)).length;
    const outcome = paid(await upgradePlan(deps, account, 'hobbyist', UPGRADE));
    expect(outcome.events.map((e) => e.type)).to.deep.equal(['PlanChanged', 'ProrationCharged']);

    const state = await s.ledger.state(account);
    expect(state.tier).to.equal('hobbyist');
    expect(state.allowance).to.equal(PLANS.hobbyist.monthly_allowance);
    expect(state.used_allowance).to.equal(10);

    const appended = (await ledgerOfAccount(s, account)).slice(before);
    expect(appended.map((e) => e.type)).to.deep.equal(['PlanChanged', 'ProrationCharged']);
    const [changed, charged] = appended as [Of<'PlanChanged'>, Of<'ProrationCharged'>];
    expect(changed.data).to.include({ tier: 'hobbyist', reason: 'set' });
    expect(charged.data).to.include({ kind: 'plan', from: 'free', to: 'hobbyist', days: 21, days_in_month: 30, amount_cents: UPGRADE, period: '2024-04' });
    expect(charged.data.payment_ref).to.be.a('string').and.not.equal('').and.not.equal('none');

    // One payment, for the amount quoted, under the reference the ledger recorded.
    expect(billing.charges).to.have.length(1);
    expect(billing.charges[0]).to.include({ account_id: account, amount_cents: UPGRADE, payment_ref: charged.data.payment_ref });
    expect(billing.refunds).to.have.length(0);

    // A call above the free allowance now fits.
    await debit(s, account, 5_000);
  });

  it('refuses an upgrade to a cheaper or the same tier with bad_request, and a downgrade to a dearer one', async () => {
    const before = (await ledgerOfAccount(s, account)).length;
    await expectRefused(upgradeQuote(deps, account, 'free'), 'bad_request');
    await expectRefused(upgradePlan(deps, account, 'free', 0), 'bad_request');
    await expectRefused(upgradeQuote(deps, account, 'hobbyist'), 'bad_request');
    await expectRefused(upgradePlan(deps, account, 'hobbyist', UPGRADE), 'bad_request');
    await expectRefused(downgradePlan(deps, account, 'builder'), 'bad_request');
    await expectRefused(downgradePlan(deps, account, 'hobbyist'), 'bad_request');
    expect(await ledgerOfAccount(s, account)).to.have.length(before);
    expect((await s.ledger.state(account)).tier).to.equal('hobbyist');
  });

  it('sells a credit pack: prepaid credits added, its price and payment recorded on PackPurchased', async () => {
    const prepaid = (await s.ledger.state(account)).prepaid;
    const outcome = paid(await buyPack(deps, account, 'pack-10k', 'purchase-0001'));
    expect(outcome.events.map((e) => e.type)).to.deep.equal(['PackPurchased']);
    expect((await s.ledger.state(account)).prepaid).to.equal(prepaid + 10_000);
    const [bought] = ofType(await ledgerOfAccount(s, account), 'PackPurchased');
    expect(bought!.data).to.include({ credits: 10_000, price_cents: 500 });
    expect(bought!.data.payment_ref).to.be.a('string').and.not.equal('');
    expect(billing.charges.at(-1)).to.include({ amount_cents: 500, payment_ref: bought!.data.payment_ref });
  });

  it('credits the same purchase reference once', async () => {
    const prepaid = (await s.ledger.state(account)).prepaid;
    const again = paid(await buyPack(deps, account, 'pack-10k', 'purchase-0001'));
    expect(again.events).to.have.length(0);
    expect((await s.ledger.state(account)).prepaid).to.equal(prepaid);
    expect(ofType(await ledgerOfAccount(s, account), 'PackPurchased')).to.have.length(1);
  });

  it('refuses an unknown pack and a malformed purchase reference with bad_request, charging nothing', async () => {
    const charges = billing.charges.length;
    const before = (await ledgerOfAccount(s, account)).length;
    await expectRefused(buyPack(deps, account, 'pack-5k', 'purchase-0002'), 'bad_request');
    await expectRefused(buyPack(deps, account, 'constructor', 'purchase-0002'), 'bad_request');
    await expectRefused(buyPack(deps, account, 'pack-10k', 'short'), 'bad_request');
    await expectRefused(buyPack(deps, account, 'pack-10k', 'has spaces in it'), 'bad_request');
    expect(billing.charges).to.have.length(charges);
    expect(await ledgerOfAccount(s, account)).to.have.length(before);
  });

  it('records every payment under a reference of its own, for the amount charged, none refunded', async () => {
    expectPaymentsHonest(await ledgerOfAccount(s, account), billing);
  });

  it('does not invoice a month that is not closed yet', async () => {
    await s.runner.waitForHead();
    await expectRefused(issueInvoice(invoiceDeps, account, '2024-04'), 'not_found');
    expect(await s.events.readStream(invoicesStream(account))).to.have.length(0);
  });

  let april: Invoice;
  it('closes April with May’s first decision and invoices it: free plan, the proration, the pack; numbered -0001', async () => {
    clock.set('2024-05-02T09:00:00Z');
    const closing = await debit(s, account);
    expect(closing.events.map((e) => e.type)).to.include('LedgerPeriodClosed');
    await s.runner.waitForHead();

    april = await issuedInvoice(invoiceDeps, account, '2024-04');
    expect(april).to.include({ account_id: account, period: '2024-04', currency: 'usd', status: 'paid', issued_at: '2024-05-02T09:00:00.000Z' });
    // The address is on the invoice sealed under the account's key, as the log holds it.
    expect(april.email).to.match(/^pii:v1:/);
    expect(await s.personal.open(account, april.email!, 'email')).to.equal('buyer@example.com');
    expect(april.number).to.match(/^[A-Z0-9]+-0001$/);
    expect(april.lines.map((l) => l.kind)).to.deep.equal(['plan', 'proration', 'pack']);
    expect(linesOf(april, 'plan')[0]).to.include({ amount_cents: 0 });
    expect(linesOf(april, 'plan')[0]!.description).to.match(/^Free plan/);
    expect(linesOf(april, 'proration')[0]).to.include({ amount_cents: UPGRADE, quantity: 1 });
    expect(linesOf(april, 'pack')[0]).to.include({ amount_cents: 500 });
    for (const l of april.lines) expect(l.amount_cents, l.description).to.equal(l.quantity * l.unit_amount_cents);
  });

  it('totals April as the sum of its lines and as the sum of the charges the ledger recorded', async () => {
    const recorded = chargesRecorded(await ledgerOfAccount(s, account), '2024-04');
    expect(recorded.start).to.deep.equal({ tier: 'free', pro: false });
    expect(recorded.prorations).to.deep.equal([UPGRADE]);
    expect(recorded.packs).to.deep.equal([500]);
    expect(april.total_cents).to.equal(sumOfLines(april));
    expect(april.total_cents).to.equal(recorded.total);
    expect(april.total_cents).to.equal(0 + UPGRADE + 500);
  });

  it('records the invoice once, with nothing left to pay (prorations and packs were paid when bought)', async () => {
    const issued = await s.events.readStream(invoicesStream(account));
    expect(issued).to.have.length(1);
    expect(issued[0]!.type).to.equal('InvoiceIssued');
    expect(issued[0]!.data).to.deep.include({ due_cents: 0, payment_ref: null });
    expect(billing.charges.filter((c) => c.description.startsWith('Invoice'))).to.have.length(0);
  });

  it('returns the same invoice when issued again, and appends nothing', async () => {
    clock.set('2024-05-03T10:00:00Z');
    const again = await issuedInvoice(invoiceDeps, account, '2024-04');
    expect(again).to.deep.equal(april);
    expect(await s.events.readStream(invoicesStream(account))).to.have.length(1);
  });

  it('invoices May as -0002 with hobbyist’s full $19.00 plan fee, charged when issued', async () => {
    clock.set('2024-06-01T00:00:01Z');
    await debit(s, account);
    await s.runner.waitForHead();
    const may = await issuedInvoice(invoiceDeps, account, '2024-05');
    expect(may.number).to.equal(april.number.replace(/-0001$/, '-0002'));
    expect(may.lines.map((l) => l.kind)).to.deep.equal(['plan']);
    expect(may.lines[0]).to.include({ amount_cents: 1_900 });
    expect(may.lines[0]!.description).to.match(/^Hobbyist plan/);
    expect(may.total_cents).to.equal(1_900);
    expect(may.total_cents).to.equal(chargesRecorded(await ledgerOfAccount(s, account), '2024-05').total);
    const issued = await s.events.readStream(invoicesStream(account));
    expect(issued).to.have.length(2);
    expect(issued[1]!.data).to.deep.include({ due_cents: 1_900 });
    const charge = billing.charges.find((c) => c.description === 'Invoice for 2024-05');
    expect(charge).to.include({ account_id: account, amount_cents: 1_900 });
    expect((issued[1]!.data as { payment_ref: string }).payment_ref).to.equal(charge!.payment_ref);
  });

  it('lists both invoices in the invoices read model', async () => {
    await s.runner.waitForHead();
    const page = await s.reads.find(invoices, { account_id: account }, { sort: [['period', 1]] });
    expect(page.items.map((d) => [d.period, d.number])).to.deep.equal([
      ['2024-04', april.number],
      ['2024-05', april.number.replace(/-0001$/, '-0002')],
    ]);
    expect(page.items[0]!.invoice).to.deep.equal(april);
  });
});

// ----- downgrades -----------------------------------------------------------------------------

describe('Self-serve billing: a downgrade waits for the month’s end', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  let deps: BillingDeps;
  let toHobbyist: string;
  let toFree: string;

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-down-', '2024-04-10T12:00:00Z'));
    deps = { ledger: s.ledger, billing: s.billing, clock, events: s.events, returnUrl: 'http://localhost/account' };
    ({ account_id: toHobbyist } = await createAccountWithKey(s, { tier: 'builder' }));
    ({ account_id: toFree } = await createAccountWithKey(s, { tier: 'builder' }));
    await s.ledger.switchOverage(toFree, true);
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a downgrade to a dearer or the same tier, and an upgrade to a cheaper one, with bad_request', async () => {
    await expectRefused(downgradePlan(deps, toHobbyist, 'quant'), 'bad_request');
    await expectRefused(downgradePlan(deps, toHobbyist, 'builder'), 'bad_request');
    await expectRefused(downgradePlan(deps, toHobbyist, 'enterprise'), 'bad_request');
    await expectRefused(upgradeQuote(deps, toHobbyist, 'hobbyist'), 'bad_request');
    await expectRefused(upgradePlan(deps, toHobbyist, 'hobbyist', 0), 'bad_request');
    await expectRefused(upgradePlan(deps, toHobbyist, 'free', 0), 'bad_request');
    expect(ofType(await ledgerOfAccount(s, toHobbyist), 'PlanDowngradeScheduled')).to.have.length(0);
  });

  it('schedules the downgrade for the month’s end and leaves the tier and allowance as they are', async () => {
    const outcome = await downgradePlan(deps, toHobbyist, 'hobbyist');
    expect(outcome.events.map((e) => e.type)).to.deep.equal(['PlanDowngradeScheduled']);
    expect(outcome.events[0]!.data).to.include({ tier: 'hobbyist', effective_at: '2024-05-01T00:00:00.000Z' });
    await downgradePlan(deps, toFree, 'free');
    for (const account of [toHobbyist, toFree]) {
      const state = await s.ledger.state(account);
      expect(state.tier, account).to.equal('builder');
      expect(state.allowance, account).to.equal(PLANS.builder.monthly_allowance);
    }
    // Asking again changes nothing.
    expect((await downgradePlan(deps, toHobbyist, 'hobbyist')).events).to.have.length(0);
    // Still builder for the rest of April: a call beyond hobbyist's allowance fits.
    await debit(s, toHobbyist, 30_000);
  });

  it('lets a cancellation after a scheduled downgrade take the account to free', async () => {
    const { account_id: account } = await createAccountWithKey(s, { tier: 'builder' });
    await downgradePlan(deps, account, 'hobbyist');
    // The operator cancels the plan (`scores plan cancel`): free from the month's end, not hobbyist.
    await s.ledger.cancelPlan(account);
    const state = await s.ledger.state(account);
    expect(state.cancellation_effective_at).to.equal('2024-05-01T00:00:00.000Z');
    expect(stateAt(state, new Date('2024-05-01T00:00:01Z')).tier, 'the tier from 1 May').to.equal('free');
  });

  it('keeps the tier until a ledger decision after the month’s end', async () => {
    clock.set('2024-04-30T23:59:59Z');
    await debit(s, toHobbyist);
    expect((await s.ledger.state(toHobbyist)).tier).to.equal('builder');
    clock.set('2024-05-01T00:00:05Z');
    // The clock alone records nothing.
    const state = await s.ledger.state(toHobbyist);
    expect(state.tier).to.equal('builder');
    expect(ofType(await ledgerOfAccount(s, toHobbyist), 'PlanChanged')).to.have.length(0);
  });

  it('moves to hobbyist with the first decision of May: PlanChanged downgraded_at_period_end, May’s allowance hobbyist’s', async () => {
    const before = (await ledgerOfAccount(s, toHobbyist)).length;
    await debit(s, toHobbyist);
    const appended = (await ledgerOfAccount(s, toHobbyist)).slice(before);
    expect(appended.map((e) => e.type)).to.deep.equal(['LedgerPeriodClosed', 'PlanChanged', 'AllowancePeriodOpened', 'CreditsDebited']);
    expect((appended[0] as Of<'LedgerPeriodClosed'>).data.carried).to.include({ period: '2024-04', tier: 'builder' });
    expect(appended[1]!.data).to.include({ tier: 'hobbyist', reason: 'downgraded_at_period_end' });
    expect(appended[2]!.data).to.include({ period: '2024-05', allowance: PLANS.hobbyist.monthly_allowance });
    const state = await s.ledger.state(toHobbyist);
    expect(state.tier).to.equal('hobbyist');
    expect(state.allowance).to.equal(PLANS.hobbyist.monthly_allowance);
    expect(state.cancellation_effective_at).to.equal(null);
  });

  it('moves to free the same way, switching overage off (free has none)', async () => {
    const before = (await ledgerOfAccount(s, toFree)).length;
    await debit(s, toFree);
    const appended = (await ledgerOfAccount(s, toFree)).slice(before);
    expect(appended.map((e) => e.type)).to.deep.equal(['LedgerPeriodClosed', 'PlanChanged', 'OverageSwitched', 'AllowancePeriodOpened', 'CreditsDebited']);
    expect(appended[1]!.data).to.include({ tier: 'free', reason: 'downgraded_at_period_end' });
    expect(appended[2]!.data).to.include({ allow_overage: false });
    const state = await s.ledger.state(toFree);
    expect(state).to.include({ tier: 'free', allow_overage: false, allowance: PLANS.free.monthly_allowance });
  });

  it('bills April at builder (the tier it started on) and May at hobbyist', async () => {
    clock.set('2024-06-02T08:00:00Z');
    await debit(s, toHobbyist);
    await s.runner.waitForHead();
    const invoiceDeps: InvoiceDeps = { events: s.events, reads: s.reads, billing: s.billing, clock };
    const events = await ledgerOfAccount(s, toHobbyist);
    const april = await issuedInvoice(invoiceDeps, toHobbyist, '2024-04');
    expect(april.lines.map((l) => [l.kind, l.amount_cents])).to.deep.equal([['plan', 9_900]]);
    expect(april.total_cents).to.equal(chargesRecorded(events, '2024-04').total);
    const may = await issuedInvoice(invoiceDeps, toHobbyist, '2024-05');
    expect(may.lines.map((l) => [l.kind, l.amount_cents])).to.deep.equal([['plan', 1_900]]);
    expect(may.total_cents).to.equal(chargesRecorded(events, '2024-05').total);
    expect(may.number).to.match(/-0002$/);
  });
});

// ----- Pro membership -------------------------------------------------------------------------

describe('Self-serve billing: the Pro membership', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  let billing: RecordingBilling;
  let deps: BillingDeps;
  let member: string;
  let keeper: string;
  // Pro on 10 April: 9 × 100 cents × 21/30 days.
  const PRO = Math.round((9 * 100 * 21) / 30);

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-pro-', '2024-04-10T12:00:00Z'));
    billing = new RecordingBilling(s.billing);
    deps = { ledger: s.ledger, billing, clock, events: s.events, returnUrl: 'http://localhost/account' };
    ({ account_id: member } = await createAccountWithKey(s, { tier: 'free' }));
    ({ account_id: keeper } = await createAccountWithKey(s, { tier: 'free' }));
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('quotes the membership prorated: 900 × 21/30 cents', async () => {
    expect(PRO).to.equal(630);
    expect(await proQuote(deps, member)).to.deep.equal({ days: 21, days_in_month: 30, monthly_difference_cents: 900, amount_cents: prorated(900, 21, 30) });
  });

  it('refuses a wrong amount with conflict and changes nothing', async () => {
    const before = (await ledgerOfAccount(s, member)).length;
    await expectRefused(startPro(deps, member, PRO + 1), 'conflict');
    await expectRefused(startPro(deps, member, 900), 'conflict');
    expect(await ledgerOfAccount(s, member)).to.have.length(before);
    expect((await s.ledger.state(member)).pro).to.equal(false);
    expect(billing.charges).to.have.length(0);
  });

  it('starts Pro at once: pro on, the Pro allowance now, ProrationCharged with the prorated price', async () => {
    const before = (await ledgerOfAccount(s, member)).length;
    await startPro(deps, member, PRO);
    const state = await s.ledger.state(member);
    expect(state.pro).to.equal(true);
    expect(state.tier).to.equal('free');
    expect(state.allowance).to.equal(5_000);
    const appended = (await ledgerOfAccount(s, member)).slice(before);
    expect(appended.map((e) => e.type)).to.deep.equal(['ProMembershipChanged', 'ProrationCharged']);
    expect(appended[1]!.data).to.include({ kind: 'pro', days: 21, days_in_month: 30, amount_cents: PRO, period: '2024-04' });
    const ref = (appended[1] as Of<'ProrationCharged'>).data.payment_ref;
    expect(ref).to.be.a('string').and.not.equal('');
    expect(billing.charges).to.have.length(1);
    expect(billing.charges[0]).to.include({ amount_cents: PRO, payment_ref: ref });
    // 4,000 credits do not fit free's 1,000 but fit Pro's 5,000.
    await debit(s, member, 4_000);
  });

  it('refuses a second start with conflict', async () => {
    const before = (await ledgerOfAccount(s, member)).length;
    await expectRefused(proQuote(deps, member), 'conflict');
    await expectRefused(startPro(deps, member, PRO), 'conflict');
    expect(await ledgerOfAccount(s, member)).to.have.length(before);
    expect(billing.charges).to.have.length(1);
  });

  it('ends Pro at once; the credits granted this month stay', async () => {
    const outcome = await endPro(deps, member);
    expect(outcome.events.map((e) => e.type)).to.deep.equal(['ProMembershipChanged']);
    const state = await s.ledger.state(member);
    expect(state.pro).to.equal(false);
    expect(state.allowance).to.equal(5_000);
    // Ending it again changes nothing.
    expect((await endPro(deps, member)).events).to.have.length(0);
  });

  it('charges a membership started again in the same month as a payment of its own', async () => {
    clock.set('2024-04-20T12:00:00Z');
    const again = await proQuote(deps, member);
    expect(again.amount_cents).to.equal(prorated(900, 11, 30));
    await startPro(deps, member, again.amount_cents);
    expect((await s.ledger.state(member)).pro).to.equal(true);
    expectPaymentsHonest(await ledgerOfAccount(s, member), billing);
  });

  it('invoices the prorated start in April and the full membership in May', async () => {
    clock.set('2024-04-12T00:00:00Z');
    await startPro(deps, keeper, prorated(900, 19, 30));
    clock.set('2024-05-05T00:00:00Z');
    await debit(s, keeper);
    clock.set('2024-06-05T00:00:00Z');
    await debit(s, keeper);
    await s.runner.waitForHead();
    const invoiceDeps: InvoiceDeps = { events: s.events, reads: s.reads, billing, clock };
    const events = await ledgerOfAccount(s, keeper);
    const april = await issuedInvoice(invoiceDeps, keeper, '2024-04');
    expect(april.lines.map((l) => [l.kind, l.amount_cents])).to.deep.equal([
      ['plan', 0],
      ['proration', prorated(900, 19, 30)],
    ]);
    expect(april.total_cents).to.equal(chargesRecorded(events, '2024-04').total);
    const may = await issuedInvoice(invoiceDeps, keeper, '2024-05');
    expect(may.lines.map((l) => [l.kind, l.amount_cents])).to.deep.equal([
      ['plan', 0],
      ['pro', 900],
    ]);
    expect(may.total_cents).to.equal(sumOfLines(may));
    expect(may.total_cents).to.equal(chargesRecorded(events, '2024-05').total);
  });
});

// ----- double submits: what is paid and what is given back -----------------------------------

describe('Self-serve billing: the same form submitted twice at once', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-twice-', '2024-04-10T12:00:00Z'));
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const fresh = async () => {
    const billing = new RecordingBilling(s.billing);
    const { account_id } = await createAccountWithKey(s, { tier: 'free' });
    return { account: account_id, billing, deps: { ledger: s.ledger, billing, clock, events: s.events, returnUrl: 'http://localhost/account' } as BillingDeps };
  };

  it('an upgrade: upgrades once and does not refund the payment the upgrade was recorded with', async () => {
    const { account, billing, deps } = await fresh();
    const amount = (await upgradeQuote(deps, account, 'hobbyist')).amount_cents;
    // The same form twice on one state is one payment: the second submission records nothing and succeeds.
    const results = await Promise.allSettled([upgradePlan(deps, account, 'hobbyist', amount), upgradePlan(deps, account, 'hobbyist', amount)]);
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(2);
    const events = await ledgerOfAccount(s, account);
    expect(ofType(events, 'ProrationCharged')).to.have.length(1);
    expect((await s.ledger.state(account)).tier).to.equal('hobbyist');
    expectPaymentsHonest(events, billing);
  });

  it('a Pro start: starts once and does not refund the payment the membership was recorded with', async () => {
    const { account, billing, deps } = await fresh();
    const amount = (await proQuote(deps, account)).amount_cents;
    const results = await Promise.allSettled([startPro(deps, account, amount), startPro(deps, account, amount)]);
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(2);
    const events = await ledgerOfAccount(s, account);
    expect(ofType(events, 'ProrationCharged')).to.have.length(1);
    expectPaymentsHonest(events, billing);
  });

  it('a pack: credits it once and keeps its payment', async () => {
    const { account, billing, deps } = await fresh();
    await Promise.all([buyPack(deps, account, 'pack-100k', 'twice-0001'), buyPack(deps, account, 'pack-100k', 'twice-0001')]);
    const events = await ledgerOfAccount(s, account);
    expect(ofType(events, 'PackPurchased')).to.have.length(1);
    expect((await s.ledger.state(account)).prepaid).to.equal(100_000);
    expectPaymentsHonest(events, billing);
  });

  it('one purchase reference sent for two different packs is never two purchases paid by one payment', async () => {
    const { account, billing, deps } = await fresh();
    await buyPack(deps, account, 'pack-10k', 'reused-0001');
    await Promise.allSettled([buyPack(deps, account, 'pack-100k', 'reused-0001')]);
    expectPaymentsHonest(await ledgerOfAccount(s, account), billing);
  });
});

// ----- overage --------------------------------------------------------------------------------

describe('Self-serve billing: overage on the invoice', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  let hobbyist: string;
  let builder: string;

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-overage-', '2024-04-10T12:00:00Z'));
    ({ account_id: hobbyist } = await createAccountWithKey(s, { tier: 'hobbyist' }));
    ({ account_id: builder } = await createAccountWithKey(s, { tier: 'builder' }));
    await s.ledger.switchOverage(hobbyist, true);
    await s.ledger.switchOverage(builder, true);
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('bills a hobbyist past the allowance an overage line of overage_micro_usd / 10,000 cents', async () => {
    // 25,000 from the allowance, 1,000 as overage at $0.50 per 1,000 credits: 50 cents.
    const charged = await debit(s, hobbyist, 26_000);
    expect(charged.events.find((e) => e.type === 'CreditsDebited')!.data).to.include({ from_allowance: 25_000, from_overage: 1_000 });
    const state = await s.ledger.state(hobbyist);
    expect(state.overage_credits).to.equal(1_000);
    expect(state.overage_micro_usd).to.equal(1_000 * 0.5 * 1_000);

    clock.set('2024-05-01T10:00:00Z');
    await debit(s, hobbyist);
    await s.runner.waitForHead();
    const events = await ledgerOfAccount(s, hobbyist);
    const closing = ofType(events, 'LedgerPeriodClosed').find((e) => e.data.period === '2024-04')!;
    const invoice = await issuedInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock }, hobbyist, '2024-04');
    expect(invoice.lines.map((l) => l.kind)).to.deep.equal(['plan', 'overage']);
    expect(linesOf(invoice, 'plan')[0]).to.include({ amount_cents: 1_900 });
    expect(linesOf(invoice, 'overage')[0]!.amount_cents).to.equal(closing.data.carried.overage_micro_usd / 10_000);
    expect(linesOf(invoice, 'overage')[0]!.amount_cents).to.equal(50);
    expect(invoice.total_cents).to.equal(1_950);
    expect(invoice.total_cents).to.equal(sumOfLines(invoice));
    expect(invoice.total_cents).to.equal(chargesRecorded(events, '2024-04').total);
  });

  it('rounds an overage that is not whole cents to the cent', async () => {
    // Builder: 250,000 from the allowance, 1,234 as overage at $0.40 per 1,000: 49.36 cents → 49.
    clock.set('2024-05-10T10:00:00Z');
    await debit(s, builder, 251_234);
    clock.set('2024-06-01T10:00:00Z');
    await debit(s, builder);
    await s.runner.waitForHead();
    const events = await ledgerOfAccount(s, builder);
    const closing = ofType(events, 'LedgerPeriodClosed').find((e) => e.data.period === '2024-05')!;
    expect(closing.data.carried).to.include({ overage_credits: 1_234, overage_micro_usd: 493_600 });
    const invoice = await issuedInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock }, builder, '2024-05');
    expect(linesOf(invoice, 'overage')[0]!.amount_cents).to.equal(Math.round(493_600 / 10_000));
    expect(invoice.total_cents).to.equal(9_900 + 49);
    expect(invoice.total_cents).to.equal(chargesRecorded(events, '2024-05').total);
  });
});

// ----- the invoice reactor --------------------------------------------------------------------

describe('Self-serve billing: the invoice reactor', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  let accounts: string[];
  let issuer: ReturnType<typeof startInvoiceIssuer>;
  const errors: unknown[] = [];

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-reactor-', '2024-04-10T12:00:00Z'));
    accounts = [];
    for (const tier of ['free', 'hobbyist'] as const) accounts.push((await createAccountWithKey(s, { tier })).account_id);
    for (const a of accounts) await debit(s, a, 3);
    // Passes only when the test asks for one.
    issuer = startInvoiceIssuer({ ledger: s.ledger, events: s.events, reads: s.reads, billing: s.billing, clock, intervalMs: 3_600_000, onError: (err) => errors.push(err) });
  });
  after(async () => {
    await issuer?.stop();
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const invoicesIn = async (account: string) => (await s.events.readStream(invoicesStream(account))).length;

  it('issues nothing while no month is closed', async () => {
    await s.runner.waitForHead();
    expect(await issuer.drain()).to.equal(0);
  });

  it('issues each closed month once: a second drain issues 0', async () => {
    clock.set('2024-05-02T00:00:00Z');
    for (const a of accounts) await debit(s, a);
    await s.runner.waitForHead();
    const pending = await s.reads.find(invoiceMonths, { status: 'pending' });
    expect(pending.items.map((m) => [m.account_id, m.period]).sort()).to.deep.equal(accounts.map((a) => [a, '2024-04']).sort());

    expect(await issuer.drain()).to.equal(2);
    await s.runner.waitForHead();
    expect(await issuer.drain()).to.equal(0);
    for (const a of accounts) expect(await invoicesIn(a), a).to.equal(1);
    expect(errors).to.deep.equal([]);
  });

  it('lists the issued invoices in the invoices read model and marks their months issued', async () => {
    for (const [i, a] of accounts.entries()) {
      const page = await s.reads.find(invoices, { account_id: a });
      expect(page.items).to.have.length(1);
      const doc = page.items[0]!;
      expect(doc).to.include({ account_id: a, period: '2024-04' });
      expect(doc.number).to.match(/^[A-Z0-9]+-0001$/);
      expect(doc.invoice.total_cents).to.equal(i === 0 ? 0 : 1_900);
      expect(doc.invoice.total_cents).to.equal(chargesRecorded(await ledgerOfAccount(s, a), '2024-04').total);
      const month = await s.reads.get(invoiceMonths, `${a}|2024-04`);
      expect(month).to.include({ status: 'issued', number: doc.number });
    }
    expect((await s.reads.find(invoiceMonths, { status: 'pending' })).items).to.have.length(0);
  });

  it('issues nothing again, and says so, while its read model lags behind the invoices it issued', async () => {
    clock.set('2024-06-02T00:00:00Z');
    for (const a of accounts) await debit(s, a);
    await s.runner.waitForHead();
    // The read models stop following the log: May stays `pending` there after it is invoiced.
    await s.runner.stop();
    try {
      expect(await issuer.drain()).to.equal(2);
      const second = await issuer.drain();
      for (const a of accounts) expect(await invoicesIn(a), a).to.equal(2);
      expect(second, 'invoices issued by a second pass').to.equal(0);
    } finally {
      await s.runner.start();
    }
    await s.runner.waitForHead();
    expect(await issuer.drain()).to.equal(0);
    for (const a of accounts) {
      const page = await s.reads.find(invoices, { account_id: a }, { sort: [['period', 1]] });
      expect(page.items.map((d) => d.period)).to.deep.equal(['2024-04', '2024-05']);
      expect(page.items[1]!.number).to.match(/-0002$/);
    }
  });
});

// ----- a month without a decision -------------------------------------------------------------

describe('Self-serve billing: a paid month without any call', function () {
  this.timeout(120_000);
  let s: Services;
  let clock: Clock;
  let dir: string;

  before(async () => {
    ({ s, clock, dir } = await open('scores-billing-idle-', '2024-04-10T12:00:00Z'));
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is invoiced its plan fee like any other month', async () => {
    const { account_id: account } = await createAccountWithKey(s, { tier: 'hobbyist' });
    await debit(s, account);
    // Nothing at all in May; the next call is in June.
    clock.set('2024-06-03T00:00:00Z');
    await debit(s, account);
    await s.runner.waitForHead();
    const deps: InvoiceDeps = { events: s.events, reads: s.reads, billing: s.billing, clock };
    expect((await issuedInvoice(deps, account, '2024-04')).total_cents).to.equal(1_900);
    let may: Invoice | null = null;
    let why = '';
    try {
      may = await issuedInvoice(deps, account, '2024-05');
    } catch (err) {
      why = err instanceof Error ? err.message : String(err);
    }
    expect(may, `May, a whole month on hobbyist, is not invoiced: ${why}`).to.not.equal(null);
    expect(may!.lines.map((l) => [l.kind, l.amount_cents])).to.deep.equal([['plan', 1_900]]);
  });
});

describe('Self-serve billing: an account that makes no call after its month', function () {
  this.timeout(60_000);
  let s: Services;
  let clock: Clock;
  let dir: string;
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is closed and invoiced by the monthly sweep of the invoice issuer', async () => {
    ({ s, clock, dir } = await open('scores-billing-sweep-', '2024-04-10T12:00:00Z'));
    const { account_id: account } = await createAccountWithKey(s, { tier: 'hobbyist' });
    await s.runner.waitForHead();
    clock.set('2024-05-01T00:00:05Z');
    const issuer = startInvoiceIssuer({ ledger: s.ledger, events: s.events, reads: s.reads, billing: s.billing, clock, intervalMs: 3_600_000 });
    try {
      // The first pass closes April (the account made no call since). It invoices April too when
      // the projector shows the closed month before the pass looks for pending months, else the
      // next pass does: either way exactly one invoice across the two.
      const first = await issuer.drain();
      const events = await ledgerOfAccount(s, account);
      expect(ofType(events, 'LedgerPeriodClosed').map((e) => e.data.period)).to.deep.equal(['2024-04']);
      await s.runner.waitForHead();
      expect(first + (await issuer.drain())).to.equal(1);
      const invoice = await issuedInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock }, account, '2024-04');
      expect(invoice.total_cents).to.equal(1_900);
      // Swept once a month: another pass closes nothing more.
      await issuer.drain();
      expect(ofType(await ledgerOfAccount(s, account), 'LedgerPeriodClosed')).to.have.length(1);
    } finally {
      await issuer.stop();
    }
  });
});
