/**
 * Every action of the account page confirms what it will do and then says what it did (issue 33
 * item 2), in Debian's Chromium (headless) with JavaScript off, as the pages must work without it:
 * a purchase, the Pro membership, an upgrade and a downgrade, a key rotated and a key revoked each
 * go through a page naming the amount or the consequence, where Cancel (or leaving) changes nothing
 * and only Confirm acts; the page it returns to shows a success or an error notice, once. Payment
 * steps say billing is simulated (the embedded adapter). Keys have names and a last-used date.
 * The confirmation pages fit a phone's width and pass axe-core. One server on a fixed clock; the
 * tests run in order, as one customer's visit.
 */
import { expect } from 'chai';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { fixedClock } from '../../src/core/clock.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { PLANS, PRO_MONTHLY_PRICE_USD, type Tier } from '../../src/domain/plans.js';
import { severeAxeViolations } from '../support/axe-check.js';
import { linksTo } from '../support/form-browser.js';
import type { TestServer } from '../support/server.js';
import { startTestServer } from '../support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = join(process.cwd(), '.tmp', 'screenshots');
const SESSION_COOKIE = '__Host-scores.sid';
const NOW = '2019-04-10T12:00:00.000Z';
const EMAIL = 'actions.owner@example.com';

/** 10 April: 21 of April's 30 days are left, today included. */
const prorated = (monthlyUsd: number) => Math.round((Math.round(monthlyUsd * 100) * 21) / 30);
const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const priceOf = (tier: Tier) => PLANS[tier].monthly_price_usd!;

describe('Account actions confirm and report (Chromium, without JavaScript)', function () {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let accountId = '';
  /** The first key, as the welcome page showed it. */
  let firstKey = '';

  const ledgerEvents = async () => server.services.events.readStream(ledgerStream(accountId));
  const accountEvents = async () => server.services.events.readStream(accountStream(accountId));
  const ledgerState = () => server.services.ledger.state(accountId);
  const api = (path: string, key: string) => fetch(`${server.url}${path}`, { headers: { 'X-API-Key': key } });
  /** Waits for a page at `path` (with its query): a form without fields GETs its action with an empty query ("?"). */
  const reached = (path: string) => page.waitForURL((u) => `${u.pathname}${u.search}` === path);
  const consequence = () => page.locator('#consequence').innerText();
  const notice = () => page.locator('#notice').innerText();
  const keyRows = async () => {
    const rows = page.getByRole('table', { name: 'API keys' }).locator('tbody tr');
    const out: { id: string; name: string; status: string; used: string; datetime: string | null }[] = [];
    for (let i = 0; i < (await rows.count()); i++) {
      const cells = await rows.nth(i).locator('td').allInnerTexts();
      const time = rows.nth(i).locator('td.key-used time');
      out.push({ id: cells[1]!, name: cells[2]!, status: cells[3]!, used: cells[4]!, datetime: (await time.count()) ? await time.getAttribute('datetime') : null });
    }
    return out;
  };
  const rowNamed = (name: string) => page.getByRole('table', { name: 'API keys' }).locator('tbody tr', { has: page.locator('td.key-name', { hasText: name }) });

  /** A form POST with the browser's cookies and the token of its last account page (a forged or replayed form). */
  async function postForm(path: string, fields: Record<string, string>) {
    await page.goto(`${server.url}/account`);
    const csrf = (await page.locator('input[name="_csrf"]').first().getAttribute('value'))!;
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    });
    return { status: res.status, text: await res.text() };
  }

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    server = await startTestServer({ now: NOW });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();

    // Signed in by the emailed link: a new account, its first key on the welcome page.
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Email address').fill(EMAIL);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    const [token] = linksTo(server.dir, EMAIL);
    await page.goto(`${server.url}/account/sign-in/${token}`);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(token!)),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    await page.getByRole('heading', { name: 'Welcome to Scores API' }).waitFor();
    firstKey = await page.locator('#new-key').innerText();
    expect(await page.locator('[role="status"]').first().innerText()).to.contain('Your new API key, Key 1');
    if (!(await context.cookies()).some((c) => c.name === SESSION_COOKIE)) {
      // Playwright refuses a Secure cookie for an http URL; the same value is given for https (Chromium sends it to localhost).
      const sent = (await response.headersArray()).find((h) => h.name.toLowerCase() === 'set-cookie' && h.value.startsWith(`${SESSION_COOKIE}=`))!;
      const value = sent.value.slice(SESSION_COOKIE.length + 1).split(';')[0]!;
      await context.addCookies([{ name: SESSION_COOKIE, value, url: `${server.url.replace(/^http:/, 'https:')}/`, secure: true, httpOnly: true, sameSite: 'Lax' }]);
    }
    await page.goto(`${server.url}/account`);
    accountId = (await page.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).trim();
    expect(accountId).to.match(/^acct_/);
    await server.services.runner.waitForHead();
  });

  after(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  it('names keys (the first Key 1, a new one as given) and shows when each was last used: never, then the instant of its last charged call', async () => {
    expect(await keyRows()).to.deep.equal([{ id: (await keyRows())[0]!.id, name: 'Key 1', status: 'active', used: 'never', datetime: null }]);
    await page.getByLabel('Name of the new key').fill('  CI   runner ');
    await page.getByRole('button', { name: 'Create a key' }).click();
    const key = await page.locator('#new-key').innerText();
    expect(await page.locator('[role="status"]', { has: page.locator('#new-key') }).innerText()).to.contain('Your new API key, CI runner');

    const call = await api('/v1/scores/AAPL', key);
    expect(call.status, await call.clone().text()).to.equal(200);
    const requestId = call.headers.get('x-request-id');
    await page.goto(`${server.url}/account`);
    const rows = await keyRows();
    const ci = rows.find((r) => r.name === 'CI runner')!;
    expect(ci).to.deep.include({ status: 'active', used: '10 Apr 2019, 12:00 UTC', datetime: NOW });
    expect(rows.find((r) => r.name === 'Key 1')).to.deep.include({ used: 'never', datetime: null });
    // The date comes from the ledger: the call's debit carries its key in its metadata, beside the
    // hashed line, which is as before; the key id shows in no /v1 answer.
    const debit = (await ledgerEvents()).find((e) => (e.data as Record<string, unknown>)['request_id'] === requestId)!;
    expect(debit.metadata).to.deep.include({ key_id: ci.id });
    expect(debit.data).to.include({ at: NOW }).and.not.to.have.property('key_id');
    const statement = await api('/v1/usage/ledger', key);
    expect(statement.status).to.equal(200);
    expect(await statement.text()).to.contain(requestId!).and.not.contain(ci.id);
  });

  it('buys a pack only when confirmed: Cancel, or the confirmation page alone, charges nothing; Confirm charges once and says so, once', async () => {
    const before = (await ledgerEvents()).length;
    const buy = () => page.locator('#plan li', { hasText: '10,000 credits' }).getByRole('button', { name: 'Buy' }).click();

    await buy();
    await reached(`/account/packs?pack=pack-10k`);
    await page.getByRole('heading', { name: 'Buy a credit pack' }).waitFor();
    expect(await consequence()).to.equal('You are about to pay $5.00 for 10,000 prepaid credits.');
    expect(await page.locator('#simulated-billing').innerText()).to.contain('Simulated billing.').and.contain('no card is charged');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await page.locator('#notice').count(), 'no notice: nothing was done').to.equal(0);
    expect((await ledgerEvents()).length, 'Cancel').to.equal(before);

    await buy();
    await page.getByRole('button', { name: 'Confirm: pay $5.00' }).waitFor();
    await page.goto(`${server.url}/account`);
    expect((await ledgerEvents()).length, 'the confirmation page left unanswered').to.equal(before);
    expect((await ledgerState()).prepaid).to.equal(0);

    await buy();
    await page.getByRole('button', { name: 'Confirm: pay $5.00' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await page.locator('#notice[role="status"]').innerText()).to.equal('Done. Bought 10,000 prepaid credits for $5.00.');
    const added = (await ledgerEvents()).slice(before);
    expect(added.map((e) => e.type)).to.deep.equal(['PackPurchased']);
    expect(added[0]!.data).to.include({ credits: 10_000, price_cents: 500 });
    expect((await ledgerState()).prepaid).to.equal(10_000);
    await page.reload();
    expect(await page.locator('#notice').count(), 'a notice is shown once').to.equal(0);
  });

  it('starts the Pro membership on Free after a confirmation naming its prorated price, and ends it after one naming the consequence', async () => {
    const amount = prorated(PRO_MONTHLY_PRICE_USD);
    await page.locator('#pro').getByRole('link', { name: 'become a member (prorated)' }).click();
    await reached(`/account/pro`);
    expect(await consequence()).to.equal(`You are about to pay ${dollars(amount)} now to become a Pro member.`);
    expect(await page.locator('#simulated-billing').count()).to.equal(1);
    await page.getByRole('button', { name: `Confirm: pay ${dollars(amount)} and become a member` }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await notice()).to.equal(`Done. You are a Pro member: ${dollars(amount)} paid for the rest of the month.`);
    const charged = (await ledgerEvents()).filter((e) => e.type === 'ProrationCharged').map((e) => e.data);
    expect(charged).to.have.length(1);
    expect(charged[0]).to.include({ kind: 'pro', amount_cents: amount });

    const before = (await ledgerEvents()).length;
    await page.getByRole('button', { name: 'End the membership' }).click();
    await reached(`/account/pro/end`);
    expect(await consequence()).to.equal('You are about to end the Pro membership now, with no refund.');
    expect(await page.locator('#simulated-billing').count(), 'not a payment').to.equal(0);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect((await ledgerState()).pro, 'Cancel').to.equal(true);
    expect((await ledgerEvents()).length).to.equal(before);
    await page.getByRole('button', { name: 'End the membership' }).click();
    await page.getByRole('button', { name: 'Confirm: end the membership' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await notice()).to.equal('Done. The Pro membership has ended.');
    expect((await ledgerState()).pro).to.equal(false);
  });

  it('upgrades after a confirmation naming the prorated amount, with the simulated-billing notice; Cancel changes nothing', async () => {
    const amount = prorated(priceOf('hobbyist') - priceOf('free'));
    const before = (await ledgerEvents()).length;
    const open = async () => {
      await page.locator('#plan li', { hasText: 'Hobbyist' }).getByRole('link', { name: 'upgrade now (prorated)' }).click();
      await reached(`/account/plan?tier=hobbyist`);
    };
    await open();
    expect(await consequence()).to.equal(`You are about to pay ${dollars(amount)} now to upgrade from Free to Hobbyist.`);
    expect(await page.locator('#prorated-amount').innerText()).to.equal(dollars(amount));
    expect(await page.locator('#simulated-billing').isVisible()).to.equal(true);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Free');
    expect((await ledgerEvents()).length, 'Cancel').to.equal(before);

    await open();
    await page.getByRole('button', { name: `Confirm: pay ${dollars(amount)} and upgrade` }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await notice()).to.equal(`Done. Upgraded to Hobbyist: ${dollars(amount)} paid, and its allowance of 25,000 credits applies now.`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Hobbyist');
    expect((await ledgerEvents()).slice(before).find((e) => e.type === 'ProrationCharged')?.data).to.include({ kind: 'plan', amount_cents: amount });
  });

  it('offers no Pro membership on Hobbyist, where it adds nothing, and refuses a forged purchase of it with an error notice, charging nothing', async () => {
    await page.goto(`${server.url}/account`);
    expect(await page.locator('#pro').count()).to.equal(0);
    expect(await page.locator('a[href="/account/pro"]').count()).to.equal(0);
    const before = (await ledgerEvents()).length;
    const shown = await page.goto(`${server.url}/account/pro`);
    expect(shown?.status()).to.equal(400);
    expect(await page.locator('main').innerText()).to.contain('adds nothing to the hobbyist plan');

    const forged = await postForm('/account/pro', { amount_cents: String(prorated(PRO_MONTHLY_PRICE_USD)) });
    expect(forged.status).to.equal(400);
    expect(forged.text).to.match(/<div class="notice error" role="alert" id="notice"><p><strong>Not done\.<\/strong> The Pro membership adds nothing to the hobbyist plan[^<]*\(code <code>bad_request<\/code>\)/);
    expect(forged.text, 'the account page answers it').to.contain('<h1>Your account</h1>');
    expect((await ledgerEvents()).length).to.equal(before);
    expect((await ledgerState()).pro).to.equal(false);
  });

  it('schedules a downgrade after a confirmation naming when it applies and that nothing is charged', async () => {
    await page.goto(`${server.url}/account`);
    await page.locator('#plan li', { hasText: 'Free' }).getByRole('link', { name: 'move at the end of April 2019' }).click();
    await reached(`/account/plan?tier=free`);
    expect(await consequence()).to.equal('You are about to move from Hobbyist to Free ($0.00 a month) at the end of April 2019, for $0.00 now.');
    await page.getByRole('button', { name: 'Confirm: move to Free at the end of the month' }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await notice()).to.equal('Done. Your plan moves to Free at the end of April 2019 (2019-05-01T00:00:00.000Z). Nothing was charged.');
    expect(await page.locator('#plan-name').innerText()).to.equal('Hobbyist');
  });

  it('rotates a key after a confirmation naming it and the end of its grace; the new key keeps its name', async () => {
    const before = (await accountEvents()).length;
    const ci = (await keyRows()).find((r) => r.name === 'CI runner')!;
    const prefix = (await rowNamed('CI runner').locator('td').first().innerText()).replace('…', '');
    const open = async () => {
      await page.goto(`${server.url}/account`);
      await rowNamed('CI runner').getByRole('button', { name: 'Rotate' }).click();
      await reached(`/account/keys/${ci.id}/rotate?grace_hours=24`);
    };
    await open();
    // A grace period runs on the wall clock (24 hours from now), not the data's pinned one.
    const in24Hours = (iso: string | undefined) => expect(Date.parse(iso!) - Date.now(), iso).to.be.within(23 * 3_600_000, 24 * 3_600_000);
    const shown = /^You are about to replace the key CI runner \(.+…\) with a new one; the old key keeps working until (\S+) \(24 hours\)\.$/.exec(await consequence());
    expect(shown, 'the consequence line').to.not.equal(null);
    in24Hours(shown![1]);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#keys`);
    expect((await accountEvents()).length, 'Cancel').to.equal(before);

    await open();
    await page.getByRole('button', { name: 'Confirm: rotate CI runner' }).click();
    const status = await page.locator('[role="status"]', { has: page.locator('#new-key') }).innerText();
    const done = new RegExp(`Done\\. Rotated: the old key ${prefix.replace(/[^A-Za-z0-9]/g, '\\$&')}… works until (\\S+)\\.`).exec(status);
    expect(done, status).to.not.equal(null);
    in24Hours(done![1]);
    expect(status).to.contain('Your new API key, CI runner');
    const named = (await keyRows()).filter((r) => r.name === 'CI runner');
    expect(named.map((r) => [r.id === ci.id, r.status])).to.deep.equal([
      [true, `rotated (works until ${done![1]!.replace(/\.$/, '')})`],
      [false, 'active'],
    ]);
  });

  it('revokes a key only after a confirmation naming it: Cancel leaves it working, Confirm makes it 403 and says so', async () => {
    const first = (await keyRows()).find((r) => r.name === 'Key 1')!;
    const prefix = firstKey.slice(0, 14);
    const open = async () => {
      await page.goto(`${server.url}/account`);
      await rowNamed('Key 1').getByRole('button', { name: 'Revoke' }).click();
      await reached(`/account/keys/${first.id}/revoke`);
    };
    await open();
    expect(await consequence()).to.equal(`You are about to revoke the key Key 1 (${prefix}…).`);
    expect(await page.getByRole('button', { name: 'Confirm: revoke Key 1' }).getAttribute('class')).to.equal('danger');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${server.url}/account#keys`);
    expect((await api('/v1/scores/AAPL', firstKey)).status, 'Cancel: the key still works').to.equal(200);

    await open();
    await page.getByRole('button', { name: 'Confirm: revoke Key 1' }).click();
    await page.waitForURL(`${server.url}/account#keys`);
    expect(await notice()).to.equal(`Done. Key 1 (${prefix}…) is revoked: calls with it are refused from now on.`);
    expect((await keyRows()).find((r) => r.id === first.id)).to.deep.include({ status: 'revoked', used: '10 Apr 2019, 12:00 UTC' });
    const refused = await api('/v1/scores/AAPL', firstKey);
    expect(refused.status).to.equal(403);
    expect(((await refused.json()) as { code: string }).code).to.equal('key_forbidden');
  });

  it('answers a refused action on the account page, with its status and an error notice naming the code: a price that changed since it was shown, a key name too long', async () => {
    // An upgrade confirmed a day after its page was shown: the prorated amount is no longer the one confirmed.
    await page.goto(`${server.url}/account/plan?tier=builder`);
    const shown = await page.locator('#prorated-amount').innerText();
    const before = (await ledgerEvents()).length;
    (server.services.clock as ReturnType<typeof fixedClock>).set('2019-04-11T12:00:00Z');
    const now = prorated(priceOf('builder') - priceOf('hobbyist')) - Math.round(((priceOf('builder') - priceOf('hobbyist')) * 100) / 30);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: `Confirm: pay ${shown} and upgrade` }).click()]);
    expect(answer.status()).to.equal(409);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(await page.locator('#notice[role="alert"]').innerText()).to.equal(`Not done. The prorated amount is now ${dollars(now)}, not ${shown}: review it and confirm again (code conflict)`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Hobbyist');
    expect((await ledgerEvents()).length, 'nothing charged').to.equal(before);

    // The field's maxlength stops a person typing more; a form sent anyway is refused by the decider.
    const keysBefore = (await accountEvents()).length;
    const refused = await postForm('/account/keys', { name: 'x'.repeat(61) });
    expect(refused.status).to.equal(400);
    expect(refused.text).to.contain('<div class="notice error" role="alert" id="notice"><p><strong>Not done.</strong> A key name has at most 60 characters (code <code>bad_request</code>)</p></div>');
    expect(refused.text).to.contain('<h1>Your account</h1>').and.not.contain('id="new-key"');
    expect((await accountEvents()).length).to.equal(keysBefore);
  });

  it('fits each confirmation page in 390 px and finds no serious or critical axe-core violation on it', async () => {
    mkdirSync(SHOTS, { recursive: true });
    const active = (await keyRows()).find((r) => r.status === 'active')!;
    const audit = await browser.newContext({ bypassCSP: true, storageState: await context.storageState() });
    try {
      const paths = ['/account/packs?pack=pack-1m', '/account/plan?tier=builder', '/account/plan?tier=free', `/account/keys/${active.id}/rotate?grace_hours=168`, `/account/keys/${active.id}/revoke`];
      for (const [i, path] of paths.entries()) {
        for (const width of [1280, 390]) {
          const p = await audit.newPage();
          await p.setViewportSize({ width, height: width > 600 ? 900 : 844 });
          const res = await p.goto(`${server.url}${path}`);
          expect(res?.status(), path).to.equal(200);
          expect(await p.locator('#consequence').innerText()).to.match(/^You are about to /);
          const file = join(SHOTS, `confirm-${i + 1}-${width}.png`);
          await p.screenshot({ path: file, fullPage: true });
          expect(statSync(file).size).to.be.greaterThan(5_000);
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
