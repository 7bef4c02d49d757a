/**
 * The Billing port's Stripe adapter against stripe-mock (Stripe's own API double), every request
 * recorded by a proxy in front of it: each is accepted, each POST carries an idempotency key
 * derived from the ledger's ids (the same key when retried), the month's invoice Stripe is asked to
 * charge carries the issued invoice's lines and total, and what Stripe reports (events signed with
 * the test secret, verified by the adapter) changes the ledger and the invoices once.
 *
 * stripe-mock keeps no state: it answers fixtures (a customer with one saved card that its
 * PaymentIntent never charges, a Checkout Session URL, an invoice never paid), so what Stripe does
 * between requests is played here by the signed events a real account would send.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { buyPack, upgradePlan, upgradeQuote, type BillingDeps } from '../../commands/billing/billing.handler.js';
import { customerOf } from '../../commands/billing/customer.handler.js';
import { lapseOverdue } from '../../commands/billing/dunning.handler.js';
import { issueInvoice, type InvoiceDeps } from '../../commands/billing/invoice.handler.js';
import { handleProcessorEvent } from '../../commands/billing/processor-events.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { invoicePayments, invoices } from '../../projections/invoices/invoices.projection.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { foldStream } from '../../src/core/command-handler.js';
import { invoicesStream, paymentsStream } from '../../src/domain/billing/billing.events.js';
import { invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import { tempDir, testEnv } from '../support/server.js';
import { STRIPE_MOCK, STRIPE_PENDING, checkoutCompleted, invoiceEvent, startStripeRecorder, stripeEnv, type StripeRecorder, type StripeRequest } from '../support/stripe-mock.js';

type Clock = ReturnType<typeof fixedClock>;
let requests = 0;

describe('The Stripe adapter against stripe-mock', function () {
  if (!STRIPE_MOCK) {
    it(STRIPE_PENDING);
    return;
  }
  const mock = STRIPE_MOCK;
  this.timeout(120_000);
  let recorder: StripeRecorder;
  let s: Services;
  let clock: Clock;
  let dir: string;
  let deps: BillingDeps;
  let account: string;
  let customer: string;
  /** The metadata the adapter wrote on each Checkout Session, as Stripe gives it back in `checkout.session.completed`. */
  const sessions: Record<string, string>[] = [];

  const debit = (id: string, cost: number) => s.ledger.debit(id, { request_id: `req_stripe_${++requests}`, endpoint: 'scores', channel: 'rest', cost });
  /** What a verified signed event did, as the webhook route runs it. */
  const report = async (event: { body: string; signature: string }) => handleProcessorEvent(s, await s.billing.webhooks!.verify(Buffer.from(event.body), event.signature));
  const metadataOf = (r: StripeRequest) => Object.fromEntries(Object.entries(r.form).flatMap(([k, v]) => (/^metadata\[(.+)\]$/.exec(k) ? [[/^metadata\[(.+)\]$/.exec(k)![1]!, v]] : [])));
  let invoiceDeps: InvoiceDeps;
  /** The requests that charged April's invoice. */
  let charged: StripeRequest[];
  const since = (n: number) => recorder.requests.slice(n).filter((r) => r.method === 'POST');

  before(async () => {
    recorder = await startStripeRecorder(mock);
    dir = tempDir('scores-stripe-');
    clock = fixedClock('2024-04-10T12:00:00Z');
    s = await openServices(loadConfig(testEnv(dir, '2024-04-10T12:00:00Z', { SCORES_DEMO: 'off', ...stripeEnv(recorder) })), { clock });
    await s.runner.start();
    deps = { ledger: s.ledger, billing: s.billing, clock, events: s.events, returnUrl: 'http://127.0.0.1/account/checkout' };
    ({ account_id: account } = await createAccountWithKey(s, { tier: 'hobbyist', email: 'stripe.customer@example.com' }));
  });
  after(async () => {
    await s?.close();
    await recorder?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates one Stripe Customer for the account, under a key named by the account id, and records it once', async () => {
    customer = (await customerOf(deps, account))!;
    expect(await customerOf(deps, account)).to.equal(customer);
    const created = recorder.posts(/^\/v1\/customers$/);
    expect(created).to.have.length(1);
    expect(created[0]).to.include({ status: 200, idempotencyKey: `${account}:customer` });
    expect(created[0]!.form).to.include({ 'metadata[account_id]': account });
    expect(customer).to.equal(created[0]!.response['id']).and.match(/^cus_/);
    const links = await s.events.readStream(paymentsStream(account));
    expect(links.map((e) => [e.type, (e.data as { customer_ref: string }).customer_ref])).to.deep.equal([['ProcessorCustomerLinked', customer]]);
  });

  it('tries the saved card, then sends a pack to a Checkout Session; a retry sends the same keys and buys nothing yet', async () => {
    const before = recorder.requests.length;
    const first = await buyPack(deps, account, 'pack-10k', 'stripe-pack-0001');
    const [intent, checkout] = since(before);
    const key = `${account}:pack:pack-10k:stripe-pack-0001`;
    // stripe-mock lists a saved card, and its PaymentIntent never succeeds: the customer is sent to pay.
    expect(intent).to.include({ path: '/v1/payment_intents', status: 200, idempotencyKey: `${key}:intent` });
    expect(intent!.form).to.include({ amount: '500', currency: 'usd', customer, off_session: 'true', confirm: 'true' });
    expect(checkout).to.include({ path: '/v1/checkout/sessions', status: 200, idempotencyKey: `${key}:checkout` });
    expect(checkout!.form).to.include({ mode: 'payment', customer, 'line_items[0][price_data][unit_amount]': '500', 'line_items[0][quantity]': '1', success_url: 'http://127.0.0.1/account/checkout?checkout=done' });
    expect(metadataOf(checkout!)).to.deep.equal({ account_id: account, purchase: 'pack', pack: 'pack-10k', purchase_id: 'stripe-pack-0001' });
    expect(first).to.deep.equal({ redirect: checkout!.response['url'] });
    expect((first as { redirect: string }).redirect).to.match(/^https:\/\/checkout\.stripe\.com\//);
    sessions.push(metadataOf(checkout!));

    const again = recorder.requests.length;
    await buyPack(deps, account, 'pack-10k', 'stripe-pack-0001');
    expect(since(again).map((r) => [r.path, r.idempotencyKey])).to.deep.equal([intent, checkout].map((r) => [r!.path, r!.idempotencyKey]));
    expect((await s.ledger.state(account)).prepaid).to.equal(0);
  });

  it('asks for an upgrade under a key naming the ledger state it was quoted on', async () => {
    await s.ledger.switchOverage(account, true);
    await debit(account, 26_000); // 1,000 credits of overage at hobbyist's rate: 50 cents on April's invoice
    const state = await s.ledger.state(account);
    const quote = await upgradeQuote(deps, account, 'builder');
    const before = recorder.requests.length;
    const outcome = await upgradePlan(deps, account, 'builder', quote.amount_cents);
    const checkout = since(before).find((r) => r.path === '/v1/checkout/sessions')!;
    expect(checkout.idempotencyKey).to.equal(`${account}:upgrade:builder:${state.last_hash}:checkout`);
    expect(checkout.form).to.include({ 'line_items[0][price_data][unit_amount]': String(quote.amount_cents) });
    expect(metadataOf(checkout)).to.deep.equal({ account_id: account, purchase: 'upgrade', tier: 'builder', amount_cents: String(quote.amount_cents) });
    expect(outcome).to.have.property('redirect').that.matches(/^https:\/\/checkout\.stripe\.com\//);
    sessions.push(metadataOf(checkout));
  });

  it('records what the completed sessions bought once each, whatever Stripe repeats', async () => {
    const pack = checkoutCompleted(sessions[0]!, 'pi_test_pack_0001');
    expect(await report(pack)).to.deep.equal({ recorded: true, outcome: 'pack_recorded' });
    expect(await report(pack)).to.deep.equal({ recorded: false, outcome: 'pack_recorded' });
    // The same session reported under another event id credits nothing more: the pack's reference is credited once.
    expect(await report(checkoutCompleted(sessions[0]!, 'pi_test_pack_0001'))).to.deep.equal({ recorded: true, outcome: 'pack_recorded' });
    expect((await s.ledger.state(account)).prepaid).to.equal(10_000);
    expect(await report(checkoutCompleted(sessions[1]!, 'pi_test_upgrade_0001'))).to.deep.equal({ recorded: true, outcome: 'upgrade_recorded' });
    const state = await s.ledger.state(account);
    expect(state.tier).to.equal('builder');
    expect(state.last_payment_ref).to.equal('pi_test_upgrade_0001');
  });

  it('refunds a paid purchase the ledger refuses (an upgrade paid the day after its quote), under the payment\'s own key', async () => {
    const quote = await upgradeQuote(deps, account, 'quant');
    await upgradePlan(deps, account, 'quant', quote.amount_cents);
    const metadata = metadataOf(recorder.posts(/^\/v1\/checkout\/sessions$/).at(-1)!);
    clock.set('2024-04-11T12:00:00Z');
    const before = recorder.requests.length;
    expect(await report(checkoutCompleted(metadata, 'pi_test_late_upgrade'))).to.deep.equal({ recorded: true, outcome: 'refunded: conflict' });
    const [refund] = since(before);
    expect(refund).to.include({ path: '/v1/refunds', status: 200, idempotencyKey: 'refund:pi_test_late_upgrade' });
    expect(refund!.form).to.include({ payment_intent: 'pi_test_late_upgrade' });
    expect((await s.ledger.state(account)).tier).to.equal('builder');
  });

  it('opens a Customer Portal session for the account\'s customer', async () => {
    const before = recorder.requests.length;
    const url = await s.billing.portalUrl(customer, 'http://127.0.0.1/account#plan', `${account}:portal:req_test_1`);
    const [portal] = since(before);
    expect(portal).to.include({ path: '/v1/billing_portal/sessions', status: 200, idempotencyKey: `${account}:portal:req_test_1` });
    expect(portal!.form).to.include({ customer, return_url: 'http://127.0.0.1/account#plan' });
    expect(url).to.equal(portal!.response['url']).and.match(/^https:\/\//);
  });

  it('issues April\'s invoice with the ledger\'s lines, and Stripe is asked to charge the same lines and total', async () => {
    clock.set('2024-05-02T09:00:00Z');
    await debit(account, 1); // April closes
    await s.runner.waitForHead();
    invoiceDeps = { events: s.events, reads: s.reads, billing: s.billing, clock };
    const before = recorder.requests.length;
    const { invoice } = await issueInvoice(invoiceDeps, account, '2024-04');
    charged = since(before);
    expect(invoice.lines.map((l) => l.kind)).to.deep.equal(['plan', 'pack', 'proration', 'overage']);
    const created = charged.find((r) => r.path === '/v1/invoices')!;
    expect(created.form).to.include({ customer, currency: 'usd', 'metadata[account_id]': account, 'metadata[period]': '2024-04', pending_invoice_items_behavior: 'exclude' });
    const items = charged.filter((r) => r.path === '/v1/invoiceitems');
    expect(items.map((r) => ({ invoice: r.form['invoice'], description: r.form['description'], quantity: Number(r.form['quantity']), unit_amount_cents: Number(r.form['unit_amount_decimal']), kind: r.form['metadata[kind]'] }))).to.deep.equal(
      invoice.lines.map((l) => ({ invoice: created.response['id'], description: l.description, quantity: l.quantity, unit_amount_cents: l.unit_amount_cents, kind: l.kind })),
    );
    const stripeTotal = items.reduce((n, r) => n + Number(r.form['quantity']) * Number(r.form['unit_amount_decimal']), 0);
    expect(stripeTotal).to.equal(invoice.total_cents);
    // What was paid when bought (the upgrade's proration, the pack) is credited: Stripe collects the rest, what the invoice says was due.
    const paidWhenBought = invoice.lines.filter((l) => l.kind === 'proration' || l.kind === 'pack').reduce((n, l) => n + l.amount_cents, 0);
    const credit = charged.find((r) => /\/balance_transactions$/.test(r.path))!;
    expect(Number(credit.form['amount'])).to.equal(-paidWhenBought);
    const issued = (await s.events.readStream(invoicesStream(account)))[0]!.data as { due_cents: number; payment_ref: string };
    expect(stripeTotal + Number(credit.form['amount'])).to.equal(issued.due_cents);
    expect(charged.map((r) => r.path.replace(/(in|cus)_\w+/g, ':id'))).to.deep.equal([
      '/v1/invoices',
      ...invoice.lines.map(() => '/v1/invoiceitems'),
      '/v1/customers/:id/balance_transactions',
      '/v1/invoices/:id/finalize',
      '/v1/invoices/:id/pay',
    ]);
    expect(charged.map((r) => r.idempotencyKey)).to.deep.equal([
      `${account}:invoice:2024-04:invoice`,
      ...invoice.lines.map((_l, i) => `${account}:invoice:2024-04:line-${i}`),
      `${account}:invoice:2024-04:prepaid`,
      `${account}:invoice:2024-04:finalize`,
      `${account}:invoice:2024-04:pay`,
    ]);
    // stripe-mock never collects: the invoice is issued open, and Stripe's report settles it (below).
    expect(invoice.status).to.equal('open');
    expect(issued.payment_ref).to.equal(created.response['id']);
  });

  it('sends the same keys when the invoice\'s charge is retried (an issuer that stopped before recording it)', async () => {
    const { invoice } = await issueInvoice(invoiceDeps, account, '2024-04');
    const before = recorder.requests.length;
    await s.billing.chargeInvoice({ account_id: account, customer_ref: customer, period: '2024-04', lines: invoice.lines, total_cents: invoice.total_cents, paid_cents: 0, idempotency_key: 'invoice:2024-04' });
    const keys = since(before).map((r) => r.idempotencyKey);
    expect(keys.filter((k) => !k!.endsWith(':prepaid'))).to.deep.equal(charged.map((r) => r.idempotencyKey).filter((k) => !k!.endsWith(':prepaid')));
  });

  it('puts April into dunning when Stripe reports the payment failed (once, an email says so), and out when it reports it paid', async () => {
    const prepaid = (await s.ledger.state(account)).prepaid;
    const failed = invoiceEvent('invoice.payment_failed', account, '2024-04');
    expect(await report(failed)).to.deep.equal({ recorded: true, outcome: 'dunning_started' });
    expect(await report(invoiceEvent('invoice.payment_failed', account, '2024-04'))).to.deep.equal({ recorded: true, outcome: 'dunning_continues' });
    await s.runner.waitForHead();
    const dunning = await s.reads.get(invoicePayments, `${account}|2024-04`);
    expect(dunning).to.include({ status: 'failing', grace_until: '2024-05-16T09:00:00.000Z' });
    const mails = readdirSync(join(dir, 'outbox')).map((f) => readFileSync(join(dir, 'outbox', f), 'utf8')).filter((m) => /could not collect/.test(m));
    expect(mails).to.have.length(1);
    expect(mails[0]).to.match(/To: stripe\.customer@example\.com/i);
    expect((await s.ledger.state(account)).prepaid, 'a failed payment takes no credit back').to.equal(prepaid);

    expect(await report(invoiceEvent('invoice.paid', account, '2024-04'))).to.deep.equal({ recorded: true, outcome: 'invoice_paid' });
    await s.runner.waitForHead();
    expect(await s.reads.get(invoicePayments, `${account}|2024-04`)).to.include({ status: 'paid' });
    const listed = (await s.reads.find(invoices, { account_id: account })).items;
    expect(listed.map((d) => [d.period, d.invoice.status])).to.deep.equal([['2024-04', 'paid']]);
    const state = (await foldStream(s.events, invoiceDecider, invoicesStream(account))).state;
    expect(state.issued.get('2024-04')!.status).to.equal('paid');
    expect(await lapseOverdue({ ...invoiceDeps, ledger: s.ledger })).to.equal(0);
  });

  it('lets an unpaid dunning lapse after its grace: the plan falls back to free at the month\'s end, the credits bought stay', async () => {
    const { account_id: lapser } = await createAccountWithKey(s, { tier: 'hobbyist' });
    await report(checkoutCompleted({ account_id: lapser, purchase: 'pack', pack: 'pack-10k', purchase_id: 'lapser-pack-01' }, 'pi_test_lapser_pack'));
    expect(await report(invoiceEvent('invoice.payment_failed', lapser, '2024-04'))).to.deep.equal({ recorded: true, outcome: 'dunning_started' });
    const dunningDeps = { events: s.events, reads: s.reads, clock, ledger: s.ledger };
    await s.runner.waitForHead();
    clock.set('2024-05-15T09:00:00Z');
    expect(await lapseOverdue(dunningDeps), 'within the grace').to.equal(0);
    clock.set('2024-05-17T09:00:00Z');
    expect(await lapseOverdue(dunningDeps)).to.equal(1);
    const scheduled = await s.ledger.state(lapser);
    expect(scheduled).to.include({ tier: 'hobbyist', prepaid: 10_000, cancellation_effective_at: '2024-06-01T00:00:00.000Z' });
    clock.set('2024-06-02T09:00:00Z');
    await debit(lapser, 1);
    const after = await s.ledger.state(lapser);
    expect(after.tier).to.equal('free');
    expect(after.prepaid, 'the pack bought is not taken back').to.equal(10_000);
  });

  it('had every request it made accepted by stripe-mock, and every POST carried a key derived from the ledger\'s ids', () => {
    expect(recorder.requests.filter((r) => r.status !== 200).map((r) => `${r.method} ${r.path} ${r.status} ${JSON.stringify(r.response)}`)).to.deep.equal([]);
    const posts = recorder.requests.filter((r) => r.method === 'POST');
    for (const r of posts) expect(r.idempotencyKey, `${r.path}`).to.match(/^(acct_[\w-]+:(customer|pack:|upgrade:|invoice:|portal:)|refund:pi_)/);
    const endpoints = new Set(posts.map((r) => r.path.replace(/(in|cus)_\w+/g, ':id')));
    expect([...endpoints].sort()).to.deep.equal(
      [
        '/v1/billing_portal/sessions',
        '/v1/checkout/sessions',
        '/v1/customers',
        '/v1/customers/:id/balance_transactions',
        '/v1/invoiceitems',
        '/v1/invoices',
        '/v1/invoices/:id/finalize',
        '/v1/invoices/:id/pay',
        '/v1/payment_intents',
        '/v1/refunds',
      ].sort(),
    );
  });
});
