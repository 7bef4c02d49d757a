/**
 * The account page's upgrade with STRIPE_SECRET_KEY set, in a real browser (Debian's Chromium,
 * headless), the service's Stripe calls going to stripe-mock through a recording proxy: Confirm
 * sends the browser to the Checkout Session's URL stripe-mock returned, Stripe's page (a stand-in
 * served for Stripe's host: the browser reaches nothing but the service) sends it back, and the
 * plan changes once the signed `checkout.session.completed` arrives. Then the Customer Portal
 * link, and the dunning banner in and out.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';
import { until } from '../support/processes.js';
import { signInByEmail } from '../support/browser-sign-in.js';
import { STRIPE_MOCK, STRIPE_PENDING, checkoutCompleted, deliver, invoiceEvent, startStripeRecorder, stripeEnv, type StripeRecorder } from '../support/stripe-mock.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const EMAIL = 'stripe.browser@example.com';

describe('The account page paying through Stripe, in a real browser', function () {
  if (!STRIPE_MOCK) {
    it(STRIPE_PENDING);
    return;
  }
  if (!existsSync(CHROMIUM)) {
    it(`runs in Chromium when ${CHROMIUM} is installed (apt-get install -y chromium; .ci/run installs it)`);
    return;
  }
  const mock = STRIPE_MOCK;
  this.timeout(180_000);
  let recorder: StripeRecorder;
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Pages of Stripe's the browser was sent to (served by the stand-in below). */
  const atStripe: string[] = [];

  /** Stripe's hosted pages, stood in for: a page that says where it is, with the way back the session gave. */
  async function standInForStripe(ctx: BrowserContext): Promise<void> {
    await ctx.route(/^https:\/\/([a-z0-9_-]+\.)*(stripe\.com|stripe\.me)\//, async (route) => {
      atStripe.push(route.request().url());
      const session = recorder.posts(/^\/v1\/checkout\/sessions$/).at(-1);
      const back = session?.form['success_url'] ?? `${server.url}/account`;
      await route.fulfill({ status: 200, contentType: 'text/html', body: `<!doctype html><title>Stripe (stand-in)</title><h1>Pay at Stripe</h1><a href="${back}">Pay and return</a>` });
    });
  }

  before(async () => {
    recorder = await startStripeRecorder(mock);
    server = await startTestServer({ now: '2019-04-10T12:00:00Z', env: { ...stripeEnv(recorder), SCORES_DEMO: 'off' } });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await standInForStripe(context);
    page = await context.newPage();
    await signInByEmail(page, server, EMAIL);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await recorder?.close();
  });

  it('upgrades: Confirm goes to the Checkout Session stripe-mock returned, comes back, and the plan changes once Stripe confirms it', async () => {
    await page.goto(`${server.url}/account`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Free');
    expect(await page.locator('#simulated-billing').count(), 'no simulated-billing notice with Stripe').to.equal(0);
    await page.locator('#plan').getByRole('link', { name: 'upgrade now (prorated)' }).first().click();
    await page.getByRole('heading', { name: 'Upgrade to Hobbyist' }).waitFor();
    expect(await page.locator('#processor-billing').innerText()).to.match(/Paid with Stripe/);
    const amount = (await page.locator('#prorated-amount').innerText()).trim();

    await page.getByRole('button', { name: /^Confirm: pay/ }).click();
    await page.getByRole('heading', { name: 'Pay at Stripe' }).waitFor();
    const session = recorder.posts(/^\/v1\/checkout\/sessions$/).at(-1)!;
    expect(session.status).to.equal(200);
    expect(page.url(), 'the browser is at the URL stripe-mock gave the session').to.equal(session.response['url']);
    expect(`$${(Number(session.form['line_items[0][price_data][unit_amount]']) / 100).toFixed(2)}`).to.equal(amount);

    await page.getByRole('link', { name: 'Pay and return' }).click();
    await page.waitForURL(/\/account#plan$/);
    expect(await page.locator('#notice').innerText()).to.match(/Stripe has taken your payment/);
    expect(await page.locator('#plan-name').innerText(), 'not before Stripe confirms it').to.equal('Free');

    const metadata = Object.fromEntries(Object.entries(session.form).flatMap(([k, v]) => (/^metadata\[(.+)\]$/.exec(k) ? [[/^metadata\[(.+)\]$/.exec(k)![1]!, v]] : [])));
    const confirmed = await deliver(server.url, checkoutCompleted(metadata, 'pi_test_browser_upgrade'));
    expect([confirmed.status, confirmed.body['outcome']]).to.deep.equal([200, 'upgrade_recorded']);
    await page.reload();
    expect(await page.locator('#plan-name').innerText()).to.equal('Hobbyist');
  });

  it('opens the Customer Portal session Stripe returned from the plan section', async () => {
    await page.goto(`${server.url}/account#plan`);
    await page.getByRole('link', { name: 'Manage cards, invoices and cancellation (Stripe)' }).click();
    await page.getByRole('heading', { name: 'Pay at Stripe' }).waitFor();
    const portal = recorder.posts(/^\/v1\/billing_portal\/sessions$/).at(-1)!;
    expect(portal.status).to.equal(200);
    expect(portal.form['return_url']).to.equal(`${server.url}/account#plan`);
    expect(decodeURI(atStripe.at(-1)!), 'the browser went to the URL stripe-mock gave the session').to.equal(portal.response['url']);
  });

  it('shows the dunning banner while an invoice is unpaid, and not once Stripe reports it paid', async () => {
    const accountId = (await page.goto(`${server.url}/account`), (await page.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).trim());
    expect((await deliver(server.url, invoiceEvent('invoice.payment_failed', accountId, '2019-03'))).status).to.equal(200);
    await until(async () => (await page.reload(), (await page.locator('#dunning').count()) === 1), 10_000, 200);
    expect(await page.locator('#dunning').innerText()).to.match(/Payment failed[\s\S]*March 2019: update your card by 2019-04-24/);
    expect((await deliver(server.url, invoiceEvent('invoice.paid', accountId, '2019-03'))).status).to.equal(200);
    await until(async () => (await page.reload(), (await page.locator('#dunning').count()) === 0), 10_000, 200);
  });
});
