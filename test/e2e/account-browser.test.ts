/**
 * The self-serve account area in a real browser (Debian's Chromium, headless): from an email
 * address to a working key, an upgrade, an invoice, keys, sign-out, the pages without JavaScript,
 * CSRF and isolation between accounts. One server on a fixed clock; the tests run in order and
 * share the browser's state, as one user's visits would.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createAccountWithKey, type IssuedKey } from '../../commands/manage-keys/keys.handler.js';
import type { fixedClock } from '../../src/core/clock.js';
import { PLANS, type Tier } from '../../src/domain/plans.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { pdfText } from '../support/pdf-text.js';
import type { TestServer } from '../support/server.js';
import { demoKey, startTestServer, tempDir, wallClockPlus } from '../support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const NOW = '2019-04-10T12:00:00Z';
const SESSION_COOKIE = '__Host-scores.sid';
const NEXT_MONTH = '2019-05-02T09:00:00Z';
const EMAIL = 'New.User@Example.com';
const SECOND_EMAIL = 'second.user@example.com';

/** Every page of the visit, by the name of its screenshot. */
const SHOTS = ['01-home', '02-sign-in', '03-check-email', '04-confirm', '05-welcome', '06-account', '07-upgrade', '08-account-upgraded', '09-invoices'] as const;

/** Cents of a published monthly price (the plan table's dollars). */
const priceCents = (tier: Tier): number => Math.round((PLANS[tier].monthly_price_usd ?? 0) * 100);
/** `1330` → `$13.30`, written here rather than with the service's own formatter. */
const dollars = (cents: number): string => `$${(cents / 100).toFixed(2)}`;

/** A quoted-printable mail body as text: soft line breaks joined, `=XX` decoded. */
function decodeQuotedPrintable(text: string): string {
  const joined = text.replace(/=\r?\n/g, '');
  return Buffer.from(joined.replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');
}

describe('The account area in a real browser', function () {
  let browser: Browser;
  let server: TestServer;
  let context: BrowserContext;
  let page: Page;
  let noJs: BrowserContext;
  let noJsPage: Page;
  const shots = tempDir('account-shots-');
  const consoleErrors: string[] = [];
  const assetResponses: { url: string; status: number }[] = [];
  const readMails = new Set<string>();

  // What the tests learn along the way.
  let accountId = '';
  let apiKey = '';
  let keyWorkedAtOnce: { status: number; body: string } | null = null;
  /** Sign-ins after which the browser did not keep the session cookie, with the cookie as sent. */
  const droppedSessions: string[] = [];
  let invoiceNumber = '';
  /** April's upcoming invoice as /account showed it before April closed: each line's kind, words and amount, and the total. */
  let aprilPreview: { lines: { kind: string | null; description: string; amount: string }[]; total: string } | null = null;
  let second: IssuedKey;

  const clock = () => server.services.clock as ReturnType<typeof fixedClock>;
  /** The wall clock sessions expire on: real time, moved forward by hand for "a week away". */
  const wall = wallClockPlus();
  const shot = async (p: Page, name: (typeof SHOTS)[number], fullPage = true) => {
    const file = join(shots, `${name}.png`);
    await p.screenshot({ path: file, fullPage });
    expect(statSync(file).size, file).to.be.greaterThan(10_000);
  };
  const api = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { 'X-API-Key': key, ...(init.headers as Record<string, string> | undefined) } });

  /** The sign-in link of the one new mail to `email` in the outbox. */
  function signInLinkFor(email: string): string {
    const outbox = join(server.dir, 'outbox');
    const fresh = readdirSync(outbox)
      .filter((f) => f.endsWith('.eml') && !readMails.has(f))
      .map((f) => ({ f, text: decodeQuotedPrintable(readFileSync(join(outbox, f), 'utf8')) }))
      .filter((m) => /Subject: Your sign-in link/i.test(m.text) && m.text.toLowerCase().includes(`to: ${email.toLowerCase()}`));
    expect(fresh.map((m) => m.f), `new sign-in mails to ${email}`).to.have.length(1);
    readMails.add(fresh[0]!.f);
    const link = new RegExp(`${server.url.replace(/[.:/]/g, '\\$&')}/account/sign-in/[A-Za-z0-9_-]+`).exec(fresh[0]!.text)?.[0];
    expect(link, 'a link to this server in the mail').to.be.a('string');
    return link!;
  }

  /** Asks for a link on the sign-in page `p` shows, and follows it: the confirmation page. */
  async function requestAndOpenLink(p: Page, email: string, screenshots = false): Promise<void> {
    await p.getByLabel('Email address').fill(email);
    await p.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await p.getByRole('heading', { name: 'Check your email' }).waitFor();
    expect(await p.locator('p', { hasText: 'a sign-in link is on its way' }).locator('strong').innerText()).to.equal(email.toLowerCase());
    if (screenshots) await shot(p, '03-check-email');
    const res = await p.goto(signInLinkFor(email));
    expect(res?.status()).to.equal(200);
    expect(await p.getByRole('heading', { level: 1 }).innerText()).to.equal(`Sign in as ${email.toLowerCase()}`);
  }

  /**
   * Clicks "Sign in" on the confirmation page and checks that the browser kept the session cookie.
   * When it did not (see the test after the first one), the session is put in the browser by hand,
   * with the same value, so that the tests after it still run as the signed-in user; the drop is
   * recorded and reported by that test.
   */
  async function confirmSignIn(p: Page, whenShown?: (html: string) => Promise<void>): Promise<void> {
    const [response] = await Promise.all([
      p.waitForResponse((r) => r.request().method() === 'POST' && /\/account\/sign-in\/[A-Za-z0-9_-]+$/.test(r.url())),
      p.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    if (whenShown) await whenShown(await response.text());
    const sent = (await response.headersArray()).filter((h) => h.name.toLowerCase() === 'set-cookie' && h.value.startsWith(`${SESSION_COOKIE}=`));
    expect(sent, 'the sign-in sets the session cookie').to.have.length(1);
    await p.waitForLoadState('load');
    const ctx = p.context();
    if ((await ctx.cookies()).some((c) => c.name === SESSION_COOKIE)) return;
    droppedSessions.push(sent[0]!.value);
    const value = sent[0]!.value.slice(SESSION_COOKIE.length + 1).split(';')[0]!;
    // (Given for https: Playwright refuses a Secure cookie for an http URL; Chromium sends it to localhost.)
    await ctx.addCookies([{ name: SESSION_COOKIE, value, url: `${server.url.replace(/^http:/, 'https:')}/`, secure: true, httpOnly: true, sameSite: 'Lax', expires: Math.floor(Date.now() / 1000) + 7 * 86_400 }]);
    // A known address is sent on to /account, which the browser reached without its session.
    if (response.status() === 303) await p.goto(`${server.url}/account`);
  }

  /** The browser context's cookies as a Cookie header (the session's included). */
  async function cookieHeader(ctx: BrowserContext): Promise<string> {
    return (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  }

  /** A form POST with the context's cookies, outside the page (no redirect followed). */
  async function postForm(ctx: BrowserContext, path: string, fields: Record<string, string>) {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: await cookieHeader(ctx), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: res.status, location: res.headers.get('location'), type: res.headers.get('content-type') ?? '', text: await res.text() };
  }

  async function getWith(ctx: BrowserContext, path: string) {
    const res = await fetch(`${server.url}${path}`, { redirect: 'manual', headers: { cookie: await cookieHeader(ctx) } });
    return { status: res.status, location: res.headers.get('location'), type: res.headers.get('content-type') ?? '', body: Buffer.from(await res.arrayBuffer()) };
  }

  const streamLength = async (stream: string) => (await server.services.events.readStream(stream)).length;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    server = await startTestServer({ now: NOW, transportClock: wall });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
    page.on('response', (r) => {
      if (r.url().includes('/account/assets/')) assetResponses.push({ url: r.url(), status: r.status() });
    });
    // Another developer's account, with its own key, opened the same day.
    second = await createAccountWithKey(server.services, { tier: 'free', email: SECOND_EMAIL });
  });

  after(async () => {
    await noJs?.close();
    await context?.close();
    await browser?.close();
    await server?.stop();
    if (server) console.log(`      screenshots: ${shots}`);
    else rmSync(shots, { recursive: true, force: true });
  });

  it('takes a new user from an email address to a working key and a first metered call', async () => {
    let res = await page.goto(`${server.url}/`);
    expect(res?.status()).to.equal(200);
    await shot(page, '01-home');
    await page.getByRole('link', { name: 'Sign in or get a free key' }).click();
    await page.waitForURL(`${server.url}/account/sign-in`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot(page, '02-sign-in');

    await requestAndOpenLink(page, EMAIL, true);
    await shot(page, '04-confirm');
    // The page says the account is ready: a developer uses the key as soon as it is shown.
    await confirmSignIn(page, async (html) => {
      const shown = /id="new-key">([^<]+)</.exec(html)?.[1] ?? '';
      const first = await api('/v1/scores/AAPL', shown);
      keyWorkedAtOnce = { status: first.status, body: await first.text() };
    });
    await page.getByRole('heading', { name: 'Welcome to Scores API' }).waitFor();
    apiKey = await page.locator('#new-key').innerText();
    expect(apiKey).to.match(/^sk_live_[A-Za-z0-9_-]{20,}$/);
    await shot(page, '05-welcome');

    await page.getByRole('link', { name: 'Continue to your account' }).click();
    await page.waitForURL(`${server.url}/account`);
    expect(await page.locator('#email').innerText()).to.equal(EMAIL.toLowerCase());
    accountId = (await page.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).trim();
    expect(accountId).to.match(/^acct_[0-9a-f]+$/);
    expect(await page.locator('#plan-name').innerText()).to.equal('Free');
    // The call made on the welcome page, when it went through, is on the account already.
    const callsBefore = keyWorkedAtOnce?.status === 200 ? 1 : 0;

    // (The key index is a read model: the first call waits for it, see the last assertion.)
    await server.services.runner.waitForHead();
    const call = await api('/v1/scores/AAPL', apiKey);
    expect(call.status, await call.clone().text()).to.equal(200);
    const requestId = call.headers.get('x-request-id');
    const remaining = Number(call.headers.get('x-credits-remaining'));
    expect(requestId).to.be.a('string').and.not.equal('');
    const used = PLANS.free.monthly_allowance! - remaining;
    const cost = used / (callsBefore + 1);
    expect(cost).to.be.greaterThan(0);

    res = await page.reload();
    expect(res?.status()).to.equal(200);
    const ledgerRow = page.getByRole('table', { name: 'Ledger entries' }).locator('tbody tr', { hasText: requestId! });
    expect(await ledgerRow.count(), `a ledger line for request ${requestId}`).to.equal(1);
    const cells = await ledgerRow.locator('td').allInnerTexts();
    // A human label first; the event's name and the request id only as detail.
    const [label, detail, proof] = cells[2]!.split('\n');
    expect(label).to.equal('API call');
    expect(proof).to.equal(`Event CreditsDebited, request ${requestId}`);
    expect(Number(detail!.match(/^(\d+) credits? for /)?.[1]), detail).to.equal(cost);
    expect(cells[3]).to.equal(`−${cost}`);
    // The instant readable, the exact UTC instant in the <time> element.
    expect(cells[1]).to.match(/^10 Apr 2019, \d\d:\d\d UTC$/);
    expect(await ledgerRow.locator('time').getAttribute('datetime')).to.match(/^2019-04-10T\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(await page.locator('#used').innerText()).to.equal(used.toLocaleString('en-US'));
    const dayRow = page.getByRole('table', { name: 'Usage per day' }).locator('tbody tr');
    expect(await dayRow.allInnerTexts()).to.deep.equal([`10 Apr 2019\t${callsBefore + 1}\t${used}`]);
    expect(await dayRow.locator('time').getAttribute('datetime')).to.equal('2019-04-10');
    await page.locator('#usage-chart[data-drawn]').waitFor({ state: 'attached', timeout: 10_000 });
    expect(await page.locator('#usage-chart').getAttribute('data-drawn')).to.equal('1');
    expect(await page.locator('#usage-chart canvas').count()).to.be.greaterThan(0);
    await shot(page, '06-account');
  });

  it('keeps the browser signed in after the emailed link (the session cookie does not arrive expired)', () => {
    expect(droppedSessions, `the server's clock is ${NOW}, the browser's is the real one`).to.deep.equal([]);
  });

  it('lets the key shown on the welcome page be used at once', () => {
    expect(keyWorkedAtOnce, 'GET /v1/scores/AAPL with the key, as the welcome page showed it').to.deep.include({ status: 200 });
  });

  it('upgrades to Hobbyist mid-month at the prorated price, computed here from the date', async () => {
    await page.goto(`${server.url}/account`);
    await page.locator('#plan li', { hasText: 'Hobbyist' }).getByRole('link', { name: 'upgrade now (prorated)' }).click();
    await page.waitForURL(`${server.url}/account/plan?tier=hobbyist`);

    const now = new Date(NOW);
    const daysInMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate();
    const daysLeft = daysInMonth - now.getUTCDate() + 1; // today included
    const expected = Math.round(((priceCents('hobbyist') - priceCents('free')) * daysLeft) / daysInMonth);
    expect(await page.locator('#prorated-amount').innerText()).to.equal(dollars(expected));
    expect(await page.locator('body').innerText()).to.include(`${daysLeft} of ${daysInMonth} days left`);
    await shot(page, '07-upgrade');

    await page.getByRole('button', { name: `Pay ${dollars(expected)} and upgrade` }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Hobbyist');
    await shot(page, '08-account-upgraded');

    // The upcoming invoice as the page shows it now: April's plan and the proration just paid.
    const rows = await page.locator('#upcoming-lines tbody tr').all();
    const lines = await Promise.all(
      rows.map(async (r) => {
        const [description, amount] = await r.locator('td').allInnerTexts();
        return { kind: await r.getAttribute('data-kind'), description: description!, amount: amount! };
      }),
    );
    aprilPreview = { lines, total: await page.locator('#upcoming-total').innerText() };
    expect(await page.locator('#upcoming-h').innerText()).to.equal('Upcoming invoice: April 2019');
    expect(lines.map((l) => l.kind)).to.include('proration');
  });

  it("issues April's invoice when May opens: the PDF and the JSON carry the ledger's total", async () => {
    clock().set(NEXT_MONTH);
    // The first calls of May close April on each ledger.
    for (const key of [apiKey, second.key]) {
      const call = await api('/v1/scores/AAPL', key);
      expect(call.status, await call.clone().text()).to.equal(200);
    }
    await server.services.runner.waitForHead();
    await server.running.invoices!.drain();
    for (const id of [accountId, second.account_id]) expect(await streamLength(invoicesStream(id)), `invoices of ${id}`).to.equal(1);

    // The week-long session ended while the user was away (on the wall clock, which sessions expire
    // on): they sign in again, to the same account.
    wall.advance(8 * 86_400_000);
    try {
      await page.goto(`${server.url}/account`);
      expect(page.url()).to.equal(`${server.url}/account/sign-in`);
      await requestAndOpenLink(page, EMAIL);
      await confirmSignIn(page);
      await page.waitForURL(`${server.url}/account`);
    } finally {
      // The new session lasts a week from the later instant: it holds once the wall clock is back.
      wall.advance(-8 * 86_400_000);
    }
    expect(await page.locator('#new-key').count()).to.equal(0);

    // April's total from the raw ledger: the plan April opened on, and what was prorated in it.
    let tier: Tier | null = null;
    let aprilTier: Tier | null = null;
    let prorated = 0;
    for (const e of await server.services.events.readStream(ledgerStream(accountId))) {
      const d = e.data as Record<string, unknown>;
      if (e.type === 'LedgerOpened' || e.type === 'PlanChanged') tier = d['tier'] as Tier;
      if (e.type === 'ProrationCharged' && d['kind'] === 'plan') tier = d['to'] as Tier;
      if (e.type === 'AllowancePeriodOpened' && d['period'] === '2019-04') aprilTier = tier;
      if (e.type === 'ProrationCharged' && d['period'] === '2019-04') prorated += d['amount_cents'] as number;
    }
    expect(aprilTier).to.equal('free');
    const aprilTotal = priceCents(aprilTier!) + prorated;
    expect(prorated).to.be.greaterThan(0);

    const row = page.getByRole('table', { name: 'Invoices' }).locator('tbody tr', { hasText: 'April 2019' });
    expect(await row.count()).to.equal(1);
    const cells = await row.locator('td').allInnerTexts();
    invoiceNumber = cells[0]!;
    expect(invoiceNumber).to.match(/^[A-Z0-9]+-0001$/);
    expect(cells[2]).to.equal(dollars(aprilTotal));
    expect(cells[3]).to.equal('paid');
    await page.locator('#invoices').scrollIntoViewIfNeeded();
    await shot(page, '09-invoices', false);

    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('link', { name: 'PDF' }).click()]);
    expect(download.suggestedFilename()).to.equal(`invoice-${invoiceNumber}.pdf`);
    const pdf = readFileSync(await download.path());
    expect(pdf.subarray(0, 5).toString('latin1')).to.equal('%PDF-');
    const text = pdfText(pdf).split('\n');
    expect(text).to.include(invoiceNumber);
    expect(text).to.include('April 2019 (2019-04)');
    expect(text[text.indexOf('Total') + 1], text.join(' | ')).to.equal(dollars(aprilTotal));

    const json = await context.request.get(`${server.url}/account/invoices/${invoiceNumber}.json`);
    expect(json.status()).to.equal(200);
    const invoice = (await json.json()) as { total_cents: number; period: string; account_id: string };
    expect(invoice).to.deep.include({ total_cents: aprilTotal, period: '2019-04', account_id: accountId });

    // What /account previewed in April is what was issued: the same lines, amounts and total.
    const issued = invoice as unknown as { lines: { kind: string; description: string; amount_cents: number }[] };
    expect(aprilPreview, 'the preview read after the upgrade').to.not.equal(null);
    expect(aprilPreview!.lines).to.deep.equal(issued.lines.map((l) => ({ kind: l.kind, description: l.description, amount: dollars(l.amount_cents) })));
    expect(aprilPreview!.total).to.equal(dollars(aprilTotal));
  });

  it('creates a key on the account page, shows it once, then lists it by prefix only', async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.locator('#new-key').waitFor();
    const key = await page.locator('#new-key').innerText();
    const prefix = await page.locator('[role="status"] code').nth(1).innerText();
    expect(key).to.match(/^sk_live_/).and.not.equal(apiKey);
    expect(key.startsWith(prefix)).to.equal(true);
    const works = await api('/v1/scores/AAPL', key);
    expect(works.status).to.equal(200);
    // The form redirected (POST, 303, GET): the page is /account, and its Copy button copies the key.
    expect(new URL(page.url()).pathname).to.equal('/account');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).to.equal(key);
    // A reload is a GET of /account: no form sent again (no CSRF refusal), the key not shown again.
    const reloaded = await page.reload();
    expect(reloaded?.status()).to.equal(200);
    expect(await page.locator('#new-key').count()).to.equal(0);

    const res = await page.goto(`${server.url}/account`);
    const served = (await res?.text()) ?? '';
    expect(await page.locator('#new-key').count()).to.equal(0);
    const rows = await page.getByRole('table', { name: 'API keys' }).locator('tbody tr').allInnerTexts();
    expect(rows.filter((r) => r.startsWith(`${prefix}…`))).to.have.length(1);
    for (const html of [served, await page.content()]) {
      expect(html).to.include(prefix);
      expect(html).not.to.include(key);
      expect(html).not.to.include(apiKey);
    }
  });

  it('signs out: the account page then asks to sign in', async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${server.url}/account/sign-in`);
    expect((await context.cookies()).map((c) => c.name)).not.to.include(SESSION_COOKIE);
    await page.goto(`${server.url}/account`);
    expect(page.url()).to.equal(`${server.url}/account/sign-in`);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).waitFor();
  });

  it('works without JavaScript: a second link signs in the same account, the forms work, only the chart is missing', async () => {
    noJs = await browser.newContext({ javaScriptEnabled: false });
    noJsPage = await noJs.newPage();
    await noJsPage.goto(`${server.url}/account/sign-in`);
    await requestAndOpenLink(noJsPage, EMAIL);
    await confirmSignIn(noJsPage);
    await noJsPage.waitForURL(`${server.url}/account`);
    expect(await noJsPage.locator('#new-key').count(), 'no new key for an address that has an account').to.equal(0);
    expect(await noJsPage.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).to.equal(accountId);
    expect(await noJsPage.locator('#plan-name').innerText()).to.equal('Hobbyist');

    const days = await noJsPage.getByRole('table', { name: 'Usage per day' }).locator('tbody tr').allInnerTexts();
    expect(days).to.have.length(1);
    expect(days[0]).to.match(/^2 May 2019\t2\t\d+$/);
    const overage = () => noJsPage.locator('#usage dt:has-text("Overage") + dd').innerText();
    expect(await overage()).to.equal('off (hard stop)');
    await noJsPage.getByRole('button', { name: /^Switch overage on/ }).click();
    await noJsPage.waitForURL(`${server.url}/account#usage`);
    expect(await overage()).to.match(/^on: 0 credits, \$0\.00 so far$/);
    await noJsPage.getByRole('button', { name: 'Switch overage off (hard stop)' }).waitFor();

    expect(await noJsPage.locator('#usage-chart').getAttribute('data-drawn')).to.equal(null);
    expect(await noJsPage.locator('#usage-chart canvas').count()).to.equal(0);
  });

  it('refuses every state-changing form without its CSRF token, and changes nothing', async () => {
    const { body } = await getWith(noJs, '/account');
    const keyIds = [...body.toString('utf8').matchAll(/action="\/account\/keys\/([^/"]+)\/rotate"/g)].map((m) => m[1]!);
    expect(keyIds.length).to.equal(2);
    const outbox = join(server.dir, 'outbox');
    const snapshot = async () => ({
      account: await streamLength(accountStream(accountId)),
      ledger: await streamLength(ledgerStream(accountId)),
      invoices: await streamLength(invoicesStream(accountId)),
      mails: readdirSync(outbox).length,
    });
    const before = await snapshot();

    const forms: [string, Record<string, string>][] = [
      ['/account/keys', {}],
      [`/account/keys/${keyIds[0]}/rotate`, { grace_hours: '0' }],
      [`/account/keys/${keyIds[0]}/revoke`, {}],
      ['/account/overage', { on: 'off' }],
      ['/account/plan', { tier: 'builder', amount_cents: '0' }],
      ['/account/plan', { tier: 'free' }],
      ['/account/pro', { amount_cents: '0' }],
      ['/account/pro/end', {}],
      ['/account/packs', { pack: 'pack-10k', purchase: 'csrf-test-purchase' }],
      ['/account/sign-out', {}],
      ['/account/sign-in', { email: 'someone.else@example.com' }],
    ];
    for (const [path, fields] of forms) {
      const res = await postForm(noJs, path, fields);
      expect(res.status, `${path}: ${res.text.slice(0, 200)}`).to.equal(403);
      expect(res.type).to.match(/^text\/html/);
      expect(res.text, path).to.include('<h1>This form has expired</h1>');
      expect(res.text, path).to.include('<code>csrf</code>');
    }

    expect(await snapshot()).to.deep.equal(before);
    // Still signed in (the refused sign-out ended nothing), overage still on, both keys active.
    const after = await getWith(noJs, '/account');
    expect(after.status).to.equal(200);
    const html = after.body.toString('utf8');
    expect(html).to.include('Switch overage off (hard stop)');
    expect([...html.matchAll(/action="\/account\/keys\/([^/"]+)\/rotate"/g)].map((m) => m[1])).to.deep.equal(keyIds);
  });

  it("404s another account's key, invoice and webhook to this account's session", async () => {
    // The second account's April invoice (issued by the drain of the invoice test) and a webhook of the demo's quant account.
    const issued = (await server.services.events.readStream(invoicesStream(second.account_id))).map((e) => (e.data as { invoice: { number: string } }).invoice.number);
    expect(issued).to.have.length(1);
    const otherInvoice = issued[0]!;
    const hook = await api('/v1/webhooks', demoKey(server.dir, 'quant'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event_type: 'divergence_event', url: 'https://93.184.215.14/scores-hook' }),
    });
    const hookBody = (await hook.json()) as { id?: number };
    expect(hook.status, JSON.stringify(hookBody)).to.equal(201);
    await server.services.runner.waitForHead();

    // A fresh form token of this session, as its own page gives it.
    await noJsPage.goto(`${server.url}/account`);
    const csrf = (await noJsPage.locator('input[name="_csrf"]').first().getAttribute('value'))!;
    const secondAccountBefore = await streamLength(accountStream(second.account_id));
    for (const action of ['rotate', 'revoke']) {
      const res = await postForm(noJs, `/account/keys/${second.key_id}/${action}`, { _csrf: csrf, grace_hours: '0' });
      expect(res.status, `${action}: ${res.text.slice(0, 300)}`).to.equal(404);
      expect(res.text).to.include('<code>not_found</code>');
    }
    expect(await streamLength(accountStream(second.account_id))).to.equal(secondAccountBefore);
    expect((await api('/v1/scores/AAPL', second.key)).status).to.equal(200);

    expect((await getWith(noJs, `/account/invoices/${invoiceNumber}.pdf`)).status, 'own invoice').to.equal(200);
    for (const file of [`${otherInvoice}.pdf`, `${otherInvoice}.json`]) {
      const res = await getWith(noJs, `/account/invoices/${file}`);
      expect(res.status, file).to.equal(404);
      expect(res.type, file).to.match(/^text\/html/);
    }
    const webhook = await getWith(noJs, `/account/webhooks/${hookBody.id}`);
    expect(webhook.status).to.equal(404);
    expect(webhook.body.toString('utf8')).not.to.include('scores-hook');
  });

  it('deletes an account from its page once its owner types the address: the key stops, the session ends, the address opens a new account', async () => {
    const leaver = 'leaver@example.com';
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const p = await ctx.newPage();
      await p.goto(`${server.url}/account/sign-in`);
      await requestAndOpenLink(p, leaver);
      await confirmSignIn(p);
      const key = await p.locator('#new-key').innerText();
      await p.goto(`${server.url}/account`);
      const account = await p.locator('p', { hasText: 'Signed in as' }).locator('code').innerText();
      await p.getByRole('link', { name: 'Delete my account…' }).click();
      await p.getByRole('heading', { name: 'Delete your account' }).waitFor();
      expect(await p.locator('#consequence').innerText()).to.equal(`You are about to delete your account ${account}.`);

      await p.getByLabel('Type your email address to confirm').fill('someone.else@example.com');
      const [refused] = await Promise.all([p.waitForResponse((r) => r.request().method() === 'POST'), p.getByRole('button', { name: 'Confirm: delete my account' }).click()]);
      expect(refused.status()).to.equal(400);
      await p.getByText('Type your email address exactly as it is').waitFor();
      expect((await api('/v1/usage', key)).status, 'nothing was done').to.equal(200);

      await p.goto(`${server.url}/account/delete`);
      await p.getByLabel('Type your email address to confirm').fill(leaver);
      await p.getByRole('button', { name: 'Confirm: delete my account' }).click();
      await p.getByRole('heading', { name: 'Your account is deleted' }).waitFor();
      expect((await api('/v1/usage', key)).status).to.equal(403);
      await p.goto(`${server.url}/account`);
      expect(p.url()).to.equal(`${server.url}/account/sign-in`);

      await requestAndOpenLink(p, leaver);
      await confirmSignIn(p);
      await p.goto(`${server.url}/account`);
      expect(await p.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).not.to.equal(account);
    } finally {
      await ctx.close();
    }
  });

  it('saved a screenshot of every page visited', () => {
    for (const name of SHOTS) {
      const file = join(shots, `${name}.png`);
      expect(existsSync(file), file).to.equal(true);
      expect(statSync(file).size, file).to.be.greaterThan(10_000);
    }
    console.log(`      screenshots: ${shots}`);
  });

  it('logged no console error on the account pages: uPlot and the chart load from /account/assets under the policy', () => {
    expect(consoleErrors).to.deep.equal([]);
    const paths = new Set(assetResponses.map((r) => new URL(r.url).pathname));
    expect([...paths].sort()).to.deep.equal(['/account/assets/copy.js', '/account/assets/uPlot.iife.min.js', '/account/assets/uPlot.min.css', '/account/assets/usage-chart.js']);
    expect(assetResponses.filter((r) => r.status !== 200 && r.status !== 304)).to.deep.equal([]);
  });
});
