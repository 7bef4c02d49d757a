/**
 * Every public page and the account pages as a customer sees them, in Debian's Chromium
 * (headless) at a desktop width and a phone width: screenshots kept in .tmp/screenshots/ (git
 * ignores it), no page wider than its viewport, axe-core run in the page with no serious or
 * critical violation, and no console error. One demo server on a fixed clock.
 */
import { expect } from 'chai';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { buyPack } from '../../commands/billing/billing.handler.js';
import { registerWebhook, sendTestDelivery } from '../../commands/manage-webhooks/webhooks.handler.js';
import type { TestServer } from '../support/server.js';
import { startTestServer } from '../support/server.js';
import { signInByEmail } from '../support/browser-sign-in.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const SHOTS = join(process.cwd(), '.tmp', 'screenshots');
const EMAIL = 'visual.check@example.com';
const WIDTHS = [1280, 390] as const;

/**
 * The header's links and every button a form or a table offers, where a reader cannot reach or
 * read them: past the viewport's edge (inside a table scrolled sideways, say), or a header link
 * broken over two lines. Buttons hidden on purpose (`hidden`, no box) are left out.
 */
const OUT_OF_REACH = `(() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  for (const el of document.querySelectorAll('header.site a, form button, table button')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const name = (el.textContent || '').trim().replace(/\\s+/g, ' ');
    if (box.left < -0.5 || box.right > width + 0.5) found.push(name + ': beyond the edge (' + Math.round(box.left) + '-' + Math.round(box.right) + ' px)');
    const style = getComputedStyle(el);
    const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.3;
    if (el.closest('header.site') && box.height > line * 1.7) found.push(name + ': on more than one line');
  }
  return found;
})()`;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe('Pages as a customer sees them (Chromium, 1280 and 390 px, axe-core)', function () {
  let server: TestServer;
  let browser: Browser;
  /** The signed-in customer's browser, and a visitor's (the sign-in page sends a signed-in one on). */
  let context: BrowserContext;
  let visitor: BrowserContext;
  /** The same two with the pages' policy bypassed, for axe only (the policy forbids an injected script, rightly). */
  let axeContext: BrowserContext;
  let axeVisitor: BrowserContext;
  const consoleErrors: string[] = [];
  /** Requests the pages made to any host but the server's: none, Redoc's logo included (issue 45). */
  const outside: string[] = [];
  /** Request ids of calls made with the account's key: an answered one, and one refused (403 `tier`). */
  const called = { answered: '', refused: '' };

  /** Signs in by the emailed link, as a user would: the outbox's mail, its link, the confirm button. */
  const signIn = (page: Page) => signInByEmail(page, server, EMAIL);

  /**
   * Gives the account what its page shows: calls with the key the welcome page showed (usage,
   * ledger lines, the request log: one of them refused, a quant endpoint on a free key) and a
   * credit pack (a line of the upcoming invoice).
   */
  async function useTheAccount(page: Page): Promise<void> {
    const key = (await page.locator('#new-key').innerText()).trim();
    await server.services.runner.waitForHead();
    for (const ticker of ['AAPL', 'MSFT', 'AAPL']) {
      const res = await fetch(`${server.url}/v1/scores/${ticker}`, { headers: { 'X-API-Key': key } });
      expect(res.status, await res.text()).to.equal(200);
      called.answered = res.headers.get('x-request-id')!;
    }
    const refused = await fetch(`${server.url}/v1/divergence/open`, { headers: { 'X-API-Key': key } });
    expect(refused.status, await refused.text()).to.equal(403);
    called.refused = refused.headers.get('x-request-id')!;
    await page.goto(`${server.url}/account`);
    const accountId = (await page.locator('p', { hasText: 'Signed in as' }).locator('code').innerText()).trim();
    const s = server.services;
    await buyPack({ ledger: s.ledger, billing: s.billing, clock: s.clock, events: s.events, returnUrl: `${server.url}/account` }, accountId, 'pack-10k', 'visual-check-pack-1');
    // A webhook with a delivery to list (a loopback address: the test fails at once), as /account/webhooks/1 shows it.
    const hook = await registerWebhook(s, { accountId, eventType: 'score_move', url: 'https://localhost:9/visual-check' });
    expect(hook.id).to.equal(1);
    expect((await sendTestDelivery({ ...s, sender: s.webhookSender }, accountId, hook.id)).ok).to.equal(false);
  }

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    mkdirSync(SHOTS, { recursive: true });
    server = await startTestServer({ now: '2019-04-10T12:00:00Z' });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    visitor = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    for (const ctx of [context, visitor]) {
      ctx.on('request', (r) => {
        if (!/^(data|blob):/.test(r.url()) && new URL(r.url()).origin !== server.url) outside.push(r.url());
      });
    }
    const page = await context.newPage();
    await signIn(page);
    await useTheAccount(page);
    await page.close();
    axeContext = await browser.newContext({ bypassCSP: true, storageState: await context.storageState() });
    axeVisitor = await browser.newContext({ bypassCSP: true });
  });

  after(async () => {
    for (const ctx of [context, visitor, axeContext, axeVisitor]) await ctx?.close();
    await browser?.close();
    await server?.stop();
    if (server) console.log(`      screenshots: ${SHOTS}`);
  });

  /** A page to check; `path` as a function (and `shown` in the test's name) when it names what the account did first (a call's id). */
  const pages: { name: string; path: string | (() => string); shown?: string; ready: (p: Page) => Promise<unknown>; anonymous?: true }[] = [
    { name: 'home', path: '/', ready: (p) => p.getByRole('heading', { level: 1 }).waitFor() },
    { name: 'stock-AAPL', path: '/stocks/AAPL', ready: (p) => p.locator('#score-chart[data-drawn]').waitFor() },
    { name: 'docs', path: '/docs', ready: (p) => p.locator('#redoc .api-content').waitFor({ timeout: 60_000 }) },
    { name: 'guide-ledger', path: '/docs/ledger', ready: (p) => p.getByRole('heading', { level: 1 }).waitFor() },
    { name: 'guide-webhooks', path: '/docs/webhooks', ready: (p) => p.getByRole('heading', { level: 1 }).waitFor() },
    { name: 'sign-in', path: '/account/sign-in', ready: (p) => p.getByRole('heading', { level: 1 }).waitFor(), anonymous: true },
    { name: 'account', path: '/account', ready: (p) => p.locator('#usage-chart[data-drawn]').waitFor() },
    { name: 'account-webhooks', path: '/account/webhooks', ready: (p) => p.getByRole('table', { name: 'Webhooks' }).waitFor() },
    { name: 'account-webhook', path: '/account/webhooks/1', ready: (p) => p.getByRole('table', { name: 'Deliveries' }).waitFor() },
    { name: 'account-webhook-delete', path: '/account/webhooks/1/delete', ready: (p) => p.locator('#consequence').waitFor() },
    { name: 'request-log', path: '/account/requests', ready: (p) => p.getByRole('table', { name: 'Calls' }).waitFor() },
    { name: 'request-refused', path: () => `/account/requests/${called.refused}`, shown: '/account/requests/<refused call>', ready: (p) => p.locator('#request-code').waitFor() },
  ];

  for (const width of WIDTHS) {
    for (const { name, path: named, shown, ready, anonymous } of pages) {
      it(`${shown ?? named as string} at ${width} px: fits its viewport, 0 serious or critical axe violations, no console error`, async () => {
        const path = typeof named === 'string' ? named : named();
        const page = await (anonymous ? visitor : context).newPage();
        const audited = await (anonymous ? axeVisitor : axeContext).newPage();
        await audited.setViewportSize({ width, height: width > 600 ? 900 : 844 });
        await page.setViewportSize({ width, height: width > 600 ? 900 : 844 });
        const errors: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') errors.push(m.text());
        });
        page.on('pageerror', (e) => errors.push(e.message));
        try {
          const res = await page.goto(`${server.url}${path}`);
          expect(res?.status(), path).to.equal(200);
          expect(new URL(page.url()).pathname, 'not sent elsewhere (the session holds)').to.equal(path);
          await ready(page);

          const file = join(SHOTS, `${name}-${width}.png`);
          await page.screenshot({ path: file, fullPage: true });
          expect(statSync(file).size).to.be.greaterThan(10_000);
          // What the first screen shows, as a reader first sees it.
          await page.screenshot({ path: join(SHOTS, `${name}-${width}-first-screen.png`) });

          const scrollWidth = Number(await page.evaluate('document.documentElement.scrollWidth'));
          expect(scrollWidth, `${path} is ${scrollWidth} px wide at ${width}`).to.be.at.most(width);
          expect(await page.getByRole('note', { name: 'Demo data' }).count(), `the demo banner on ${path}`).to.equal(1);
          expect(await page.evaluate<string[]>(OUT_OF_REACH), `${path} at ${width}: the header's links and the forms' buttons in view, on one line`).to.deep.equal([]);

          // The same page in the audit context: axe-core injected as a script tag, then run on the whole document.
          await audited.goto(`${server.url}${path}`);
          await ready(audited);
          // Contrast is judged on settled colours: Redoc fades its panels in, and on a busy machine
          // axe could read a sample's text mid-fade.
          await audited.waitForLoadState('networkidle');
          await audited.evaluate('Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined)))');
          await audited.addScriptTag({ path: AXE });
          const violations = await audited.evaluate<AxeViolation[]>("axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)");
          const severe = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
          expect(
            severe.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`),
            `${path} at ${width}`,
          ).to.deep.equal([]);
          consoleErrors.push(...errors);
          expect(errors, `console errors on ${path} at ${width}`).to.deep.equal([]);
        } finally {
          await page.close();
          await audited.close();
        }
      });
    }
  }

  it('shows the demo banner on /, /stocks/AAPL and /docs, and the stock chart with dated axes, 0-100 and every series', async () => {
    const page = await context.newPage();
    try {
      for (const path of ['/', '/stocks/AAPL', '/docs']) {
        await page.goto(`${server.url}${path}`);
        expect(await page.getByRole('note', { name: 'Demo data' }).innerText(), path).to.contain('Simulated data: only tickers and names are real.');
      }
      await page.goto(`${server.url}/stocks/AAPL`);
      await page.locator('#score-chart[data-drawn]').waitFor();
      const legend = await page.locator('#score-chart .u-legend .u-label').allInnerTexts();
      expect(legend).to.deep.equal(['Date', 'Service score', 'Main Street', 'Wall Street', 'Restated']);
      // The scales the chart drew, read back from uPlot: the whole 0-100 and the dated span of the data.
      expect(await page.locator('#score-chart').getAttribute('data-y-range')).to.equal('0-100');
      expect(await page.locator('#score-chart').getAttribute('data-x-range')).to.match(/^\d{4}-\d{2}-\d{2}\/\d{4}-\d{2}-\d{2}$/);
      const scale = await page.evaluate<{ days: number; first: string; restated: number }>(`(() => {
        const data = JSON.parse(document.getElementById('score-data').textContent);
        return { days: data.dates.length, first: data.dates[0], restated: data.restated_at.filter(Boolean).length };
      })()`);
      expect(scale.days).to.be.greaterThan(20);
      expect(scale.first).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(Number(await page.locator('#score-chart').getAttribute('data-drawn'))).to.equal(scale.days);
    } finally {
      await page.close();
    }
  });

  it('shows on /account the keys, the usage chart with axes and a legend of figures, the ledger in words and the upcoming invoice', async () => {
    const page = await context.newPage();
    try {
      await page.goto(`${server.url}/account`);
      await page.locator('#usage-chart[data-drawn]').waitFor();
      expect(await page.getByRole('table', { name: 'API keys' }).locator('tbody tr').count()).to.be.greaterThan(0);
      // The legend at rest: the month and its total, not uPlot's "--".
      const usage = await page.evaluate<{ days: string[]; credits: number[]; calls: number[] }>("JSON.parse(document.getElementById('usage-data').textContent)");
      expect(usage.days).to.deep.equal(['2019-04-10']);
      const legend = page.locator('#usage-chart .u-legend');
      expect(await legend.locator('.u-label').allInnerTexts()).to.deep.equal(['Date', 'Credits']);
      expect(await legend.locator('.u-value').allInnerTexts()).to.deep.equal(['April 2019', `${usage.credits[0]} in all`]);
      // Pointing at the chart: the day's figures (the only day with calls is the nearest).
      await page.locator('#usage-chart .u-over').hover();
      expect(await legend.locator('.u-value').allInnerTexts()).to.deep.equal(['10 Apr 2019', `${usage.credits[0]} (${usage.calls[0]} calls)`]);
      // The axes as uPlot drew them: labelled, the whole month on the x-axis.
      expect(await page.locator('#usage-chart').getAttribute('data-axes')).to.equal('Date (UTC)|Credits per day');
      expect(await page.locator('#usage-chart').getAttribute('data-x-range')).to.equal('2019-04-01/2019-04-30');
      expect(await page.locator('#resets time').getAttribute('datetime')).to.equal('2019-05-01T00:00:00.000Z');
      expect(await page.locator('#resets').innerText()).to.equal('1 May 2019, 00:00 UTC');
      const entries = await page.getByRole('table', { name: 'Ledger entries' }).locator('tbody td strong.entry').allInnerTexts();
      expect(entries).to.include.members(['API call', 'Credit pack', 'Monthly allowance']);
      const kinds = await Promise.all((await page.locator('#upcoming-lines tbody tr').all()).map((row) => row.getAttribute('data-kind')));
      expect(kinds).to.deep.equal(['plan', 'pack']);
      expect(await page.locator('#upcoming-total').innerText()).to.equal('$5.00');
      expect(await page.locator('#upcoming-due').innerText()).to.equal('$0.00');
    } finally {
      await page.close();
    }
  });

  it('finds a refused call in the request log by its request id, and opens it: 403, code tier, nothing charged', async () => {
    const page = await context.newPage();
    try {
      await page.goto(`${server.url}/account`);
      await page.getByRole('link', { name: 'Request log' }).click();
      const calls = page.getByRole('table', { name: 'Calls' });
      await calls.waitFor();
      // Unfiltered, both calls are there, the refused one (the newer) first.
      const listed = await calls.locator('tbody tr td:first-child').allInnerTexts();
      expect(listed.slice(0, 2)).to.deep.equal([called.refused, called.answered]);
      await page.getByLabel('Request id').fill(called.refused);
      await page.getByRole('button', { name: 'Show these calls' }).click();
      await page.waitForURL((url) => url.searchParams.get('request_id') === called.refused);
      const rows = calls.locator('tbody tr');
      expect(await rows.count()).to.equal(1);
      expect(await rows.first().locator('td').allInnerTexts()).to.include.members([called.refused, '403 tier', '0']);
      await rows.first().getByRole('link', { name: called.refused }).click();
      await page.waitForURL(`${server.url}/account/requests/${called.refused}`);
      expect(await page.getByRole('heading', { level: 1 }).innerText()).to.equal(`Call ${called.refused}`);
      expect(await page.locator('#request-status').innerText()).to.equal('403');
      expect(await page.locator('#request-code code').innerText()).to.equal('tier');
      expect(await page.locator('#request-credits').innerText()).to.equal('0');
      // Filtered on 2xx, the refused call is not there; the answered one is.
      await page.goto(`${server.url}/account/requests?status=2xx`);
      const answered = await calls.locator('tbody tr td:first-child').allInnerTexts();
      expect(answered).to.include(called.answered).and.not.include(called.refused);
    } finally {
      await page.close();
    }
  });

  it('made no request to another host (Redoc\'s logo is not fetched from its CDN) and no page logged a console error', () => {
    expect(outside).to.deep.equal([]);
    expect(consoleErrors).to.deep.equal([]);
  });
});
