/**
 * A key's limits on the account page, in Debian's Chromium (headless) with JavaScript off: a key
 * created with limits from the "Create a key" form, the API enforcing them, the keys table showing
 * each key's limits, spend today and this month and last use, and a key's limits changed on its
 * Limits page (Cancel changes nothing, Confirm sets them and says so; a forged form is refused).
 * The pages fit a phone's width and pass axe-core. One server on a fixed clock; the tests run in
 * order, as one customer's visit.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { severeAxeViolations } from '../support/axe-check.js';
import { signInByEmail } from '../support/browser-sign-in.js';
import { startTestServer, type TestServer } from '../support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const NOW = '2019-04-10T12:00:00.000Z';
const EMAIL = 'limits.owner@example.com';

describe('Key limits on the account page (Chromium, without JavaScript)', function () {
  this.timeout(180_000);
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let accountId = '';
  let agentKey = '';
  let agentId = '';

  const api = async (method: string, path: string, key: string, body?: unknown) => {
    const r = await fetch(`${server.url}${path}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  const accountEvents = async () => (await server.services.events.readStream(accountStream(accountId))).length;
  const row = (name: string) => page.getByRole('table', { name: 'API keys' }).locator('tbody tr', { has: page.locator('td.key-name', { hasText: name }) });
  const cell = (name: string, cls: string) => row(name).locator(`td.${cls}`).innerText();

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    server = await startTestServer({ now: NOW });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    await signInByEmail(page, server, EMAIL);
    await page.goto(`${server.url}/account`);
    accountId = (await page.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).trim();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('creates a key with a daily limit and read-only from the "Create a key" form, and the table shows its limits', async () => {
    await page.getByLabel('Name of the new key').fill('agent');
    await page.getByText('Limits of the new key (optional)').click();
    await page.locator('#new-key-limits-daily_credit_limit').fill('4');
    await page.getByLabel('Read-only: data and usage reads only, no webhook or key changes').check();
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.waitForURL(`${server.url}/account#new-key`);
    agentKey = await page.locator('#new-key').innerText();
    agentId = (await row('agent').locator('td').nth(1).innerText()).trim();
    expect(await cell('agent', 'key-limits')).to.equal('4 credits a day · read-only');
    expect([await cell('agent', 'key-today'), await cell('agent', 'key-month'), await cell('agent', 'key-used')]).to.deep.equal(['0', '0', 'never']);
    expect(await cell('Key 1', 'key-limits')).to.equal('none');
  });

  it('is held to them by the API: 4 credits a day, then 429 key_budget_exhausted; a webhook registration refused with 403 key_scope_forbidden', async () => {
    expect((await api('GET', '/v1/scores/AAPL', agentKey)).status).to.equal(200);
    expect((await api('GET', '/v1/scores/MSFT', agentKey)).status).to.equal(200);
    const over = await api('GET', '/v1/scores/AAPL', agentKey);
    expect(over.status).to.equal(429);
    expect(over.body).to.include({ code: 'key_budget_exhausted', limit: 4, spent: 4, window: 'day' });
    const hook = await api('POST', '/v1/webhooks', agentKey, { event_type: 'score_move', url: 'https://hooks.example.com/x' });
    expect(hook.status).to.equal(403);
    expect(hook.body).to.include({ code: 'key_scope_forbidden', scope: 'read_only' });
  });

  it('shows what each key spent today and this month, and its last use', async () => {
    await page.goto(`${server.url}/account`);
    expect([await cell('agent', 'key-today'), await cell('agent', 'key-month')]).to.deep.equal(['4', '4']);
    expect(await row('agent').locator('td.key-used time').getAttribute('datetime')).to.equal(NOW);
  });

  it('changes a key’s limits on its Limits page: Cancel changes nothing, Confirm sets them, says so, and the API enforces them', async () => {
    const open = async () => {
      await page.goto(`${server.url}/account`);
      await row('agent').getByRole('button', { name: 'Limits' }).click();
      await page.waitForURL((u) => u.pathname === `/account/keys/${agentId}/limits`);
    };
    await open();
    expect(await page.locator('#consequence').innerText()).to.equal(`You are about to set the limits of the key agent (${agentKey.slice(0, 14)}…) (now: 4 credits a day · read-only).`);
    expect(await page.getByLabel('Credits per day (UTC)').inputValue()).to.equal('4');
    const before = await accountEvents();
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#keys`);
    expect(await accountEvents()).to.equal(before);

    await open();
    await page.getByLabel('Credits per day (UTC)').fill('10');
    await page.getByLabel('Credits per month (UTC)').fill('500');
    await page.getByLabel('Expires at (UTC)').fill('2099-12-31T23:59');
    await page.getByLabel('Read-only: data and usage reads only, no webhook or key changes').uncheck();
    await page.getByRole('checkbox', { name: 'scores', exact: true }).check();
    await page.getByRole('button', { name: 'Confirm: set the limits of agent' }).click();
    await page.waitForURL(`${server.url}/account#keys`);
    const limits = '10 credits a day · 500 credits a month · expires 2099-12-31T23:59:00.000Z · only scores';
    expect(await page.locator('#notice').innerText()).to.equal(`Done. agent (${agentKey.slice(0, 14)}…): limits set to ${limits}. Every API process enforces them within seconds.`);
    expect(await cell('agent', 'key-limits')).to.equal(limits);
    expect(await accountEvents()).to.equal(before + 1);

    // 4 spent today, 10 a day now: three more calls of 2 credits, then the limit.
    expect((await api('GET', '/v1/scores/AAPL', agentKey)).status).to.equal(200);
    expect((await api('GET', '/v1/screener', agentKey)).body).to.include({ code: 'key_scope_forbidden', operation: 'screener' });
    for (let i = 0; i < 2; i++) expect((await api('GET', '/v1/scores/AAPL', agentKey)).status).to.equal(200);
    expect((await api('GET', '/v1/scores/AAPL', agentKey)).body).to.include({ code: 'key_budget_exhausted', limit: 10, spent: 10 });
  });

  it('refuses a limits form that did not come from the page (no valid CSRF token), changing nothing', async () => {
    const before = await accountEvents();
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forged = await fetch(`${server.url}/account/keys/${agentId}/limits`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: 'forged', daily_credit_limit: '' }).toString(),
    });
    expect(forged.status).to.equal(403);
    expect(await accountEvents()).to.equal(before);
  });

  it('fits the account page and the Limits page in 390 px and finds no serious or critical axe-core violation on them', async () => {
    const audit = await browser.newContext({ bypassCSP: true, javaScriptEnabled: true, storageState: await context.storageState() });
    try {
      for (const path of ['/account', `/account/keys/${agentId}/limits`]) {
        for (const width of [1280, 390]) {
          const p = await audit.newPage();
          await p.setViewportSize({ width, height: width > 600 ? 900 : 844 });
          expect((await p.goto(`${server.url}${path}`))?.status(), path).to.equal(200);
          expect(Number(await p.evaluate('document.documentElement.scrollWidth')), `${path} at ${width}`).to.be.at.most(width);
          expect(await severeAxeViolations(p), `${path} at ${width}`).to.deep.equal([]);
          await p.close();
        }
      }
    } finally {
      await audit.close();
    }
  });
});
