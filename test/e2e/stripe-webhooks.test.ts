/**
 * `POST /billing/stripe/webhook` on two replicas (two server processes on one data directory),
 * Stripe's events signed with the test secret as Stripe signs them: each is recorded once by its
 * id, however often and wherever it arrives; a bad signature is a 400 that records nothing; a
 * failed payment starts dunning (an email says so) and takes no credit back; a payment ends it.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { foldStream } from '../../src/core/command-handler.js';
import { invoicesStream, processorEventStream } from '../../src/domain/billing/billing.events.js';
import { invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { startServerProcess } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { STRIPE_MOCK, STRIPE_PENDING, checkoutCompleted, deliver, invoiceEvent, signedEvent, startStripeRecorder, stripeEnv, type StripeRecorder } from '../support/stripe-mock.js';

const NOW = '2024-04-10T12:00:00Z';

describe('Stripe webhooks on two replicas', function () {
  if (!STRIPE_MOCK) {
    it(STRIPE_PENDING);
    return;
  }
  const mock = STRIPE_MOCK;
  this.timeout(240_000);
  let recorder: StripeRecorder;
  let dir: string;
  /** The store, as a third process would open it: accounts made, streams read. */
  let store: Services;
  let replicas: { url: string; stop(): Promise<void> }[] = [];
  let account: string;

  const packBought = async () => (await store.events.readStream(ledgerStream(account))).filter((e) => e.type === 'PackPurchased');

  before(async () => {
    recorder = await startStripeRecorder(mock);
    dir = tempDir('scores-stripe-webhooks-');
    const env = testEnv(dir, NOW, { SCORES_DEMO: 'off', ...stripeEnv(recorder) });
    store = await openServices(loadConfig(env));
    ({ account_id: account } = await createAccountWithKey(store, { tier: 'hobbyist', email: 'webhooks@example.com' }));
    replicas = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });
  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await store?.close();
    await recorder?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('credits a completed pack checkout once when the event arrives three times at once on two replicas', async () => {
    const event = checkoutCompleted({ account_id: account, purchase: 'pack', pack: 'pack-10k', purchase_id: 'webhook-pack-0001' }, 'pi_test_webhook_pack');
    const [a, b] = replicas.map((r) => r.url) as [string, string];
    const answers = await Promise.all([deliver(a, event), deliver(b, event), deliver(a, event)]);
    expect(answers.map((x) => x.status)).to.deep.equal([200, 200, 200]);
    expect(answers.filter((x) => x.body['recorded'] === true), 'one replica recorded it').to.have.length(1);
    expect(answers.map((x): unknown => x.body['id'])).to.deep.equal([event.id, event.id, event.id]);
    expect((await packBought()).map((e) => (e.data as { pack_id: string }).pack_id)).to.deep.equal(['pack-10k-webhook-pack-0001']);
    expect((await store.ledger.state(account, { fresh: true })).prepaid).to.equal(10_000);
    expect(await store.events.readStream(processorEventStream('Stripe', event.id))).to.have.length(1);

    // Later repeats (Stripe retries for days): 200, nothing recorded, nothing credited.
    const later = await Promise.all([deliver(b, event), deliver(a, event)]);
    expect(later.map((x): unknown[] => [x.status, x.body['recorded'], x.body['outcome']])).to.deep.equal([
      [200, false, 'pack_recorded'],
      [200, false, 'pack_recorded'],
    ]);
    expect(await packBought()).to.have.length(1);
  });

  it('refuses an event whose signature does not verify with 400, and records nothing', async () => {
    const before = (await store.events.readStream(ledgerStream(account))).length;
    const purchase = { account_id: account, purchase: 'pack', pack: 'pack-100k', purchase_id: 'forged-pack-0001' };
    const forged = checkoutCompleted(purchase, 'pi_test_forged');
    const otherSecret = signedEvent('checkout.session.completed', JSON.parse(forged.body).data.object, { secret: 'whsec_not_this_endpoints_secret' });
    const tampered = { body: forged.body.replace('pack-100k', 'pack-10k'), signature: forged.signature };
    for (const [what, event] of [['another secret', otherSecret], ['an edited body', tampered], ['no signature', { body: forged.body, signature: '' }]] as const) {
      const answer = await deliver(replicas[0]!.url, event);
      expect(answer.status, what).to.equal(400);
      expect(answer.body['code'], what).to.equal('bad_request');
    }
    expect(await store.events.readStream(processorEventStream('Stripe', JSON.parse(otherSecret.body).id))).to.have.length(0);
    expect(await store.events.readStream(processorEventStream('Stripe', forged.id))).to.have.length(0);
    expect(await store.events.readStream(ledgerStream(account))).to.have.length(before);
  });

  it('starts dunning on invoice.payment_failed (an email says so) without taking a credit back, and ends it on invoice.paid', async () => {
    const [a, b] = replicas.map((r) => r.url) as [string, string];
    const failed = invoiceEvent('invoice.payment_failed', account, '2024-03');
    expect((await Promise.all([deliver(a, failed), deliver(b, failed)])).map((x) => x.status)).to.deep.equal([200, 200]);
    const payments = async () => (await foldStream(store.events, invoiceDecider, invoicesStream(account))).state.payments.get('2024-03');
    expect(await payments()).to.deep.include({ paid: false, lapsed: false });
    expect((await payments())!.failed).to.not.equal(null);
    expect((await store.ledger.state(account, { fresh: true })).prepaid, 'the pack bought stays').to.equal(10_000);
    const mails = readdirSync(join(dir, 'outbox')).map((f) => readFileSync(join(dir, 'outbox', f), 'utf8')).filter((m) => /could not collect your invoice for March 2024/.test(m));
    expect(mails, 'one dunning email').to.have.length(1);

    const paid = await deliver(b, invoiceEvent('invoice.paid', account, '2024-03'));
    expect([paid.status, paid.body['outcome']]).to.deep.equal([200, 'invoice_paid']);
    expect(await payments()).to.deep.include({ paid: true });
    const events = (await store.events.readStream(invoicesStream(account))).map((e) => e.type);
    expect(events).to.deep.equal(['InvoicePaymentFailed', 'InvoicePaid']);
  });
});
