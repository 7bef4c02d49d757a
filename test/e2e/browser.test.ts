import { expect } from 'chai';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { TestServer } from '../support/server.js';
import { demoKey, getJson, startTestServer, tempDir } from '../support/server.js';

/** Debian's Chromium (`.ci/run` installs it); Playwright never downloads a browser here. */
const CHROMIUM = '/usr/bin/chromium';
const BASE = 'https://api.example.test';

/**
 * Flags from the machine notes: without the background-networking ones Chromium keeps trying
 * hosts this closed network refuses.
 */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('Pages in a real browser', function () {
  let server: TestServer;
  let context: BrowserContext;
  let page: Page;
  let consoleErrors: string[] = [];
  const profile = tempDir('chromium-profile-');
  const shots = tempDir('page-shots-');

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: BASE } });
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });
  beforeEach(() => {
    consoleErrors = [];
  });
  after(async () => {
    await context?.close();
    await server?.stop();
    rmSync(profile, { recursive: true, force: true });
    if (server) console.log(`      screenshots: ${shots}`);
    else rmSync(shots, { recursive: true, force: true });
  });

  it('shows a stock page with its scores table and attribution line', async () => {
    const res = await page.goto(`${server.url}/stocks/AAPL`);
    expect(res?.status()).to.equal(200);
    expect(await page.title()).to.equal('Apple Inc. (AAPL) scores — Scores API');
    await page.getByRole('heading', { name: /Apple Inc\./ }).waitFor({ state: 'visible' });

    const table = page.getByRole('table', { name: 'Recent scores' });
    await table.waitFor({ state: 'visible' });
    const headers = await table.getByRole('columnheader').allInnerTexts();
    expect(headers).to.deep.equal(['Date', 'Main Street', 'Wall Street', 'Service score', 'Gap']);
    const rows = table.locator('tbody tr');
    expect(await rows.count()).to.equal(10);
    expect(await rows.first().locator('td').first().innerText()).to.equal('2019-03-25');

    const attribution = page.locator('#attribution');
    expect(await attribution.isVisible()).to.equal(true);
    expect(await attribution.innerText()).to.equal(`Data: Scores API Main-Street/Wall-Street scores, as of 2019-03-25 — ${BASE}/stocks/AAPL?as_of=2019-03-25`);
    // The uPlot chart replaced the SVG outline: all its series in the legend.
    await page.locator('#score-chart[data-drawn]').waitFor();
    expect(await page.locator('#score-chart .u-legend .u-label').allInnerTexts()).to.include.members(['Service score', 'Main Street', 'Wall Street']);

    const file = join(shots, 'stock-AAPL.png');
    await page.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).to.be.greaterThan(10_000);
    expect(consoleErrors).to.deep.equal([]);
  });

  it("follows a response's citation_url to the same numbers (free) or to the subscriber notice (hobbyist)", async () => {
    const visit = async (citation: string) => {
      const u = new URL(citation);
      const res = await page.goto(`${server.url}${u.pathname}${u.search}`);
      expect(res?.status(), citation).to.equal(200);
    };
    const shown = async (field: string) => Number((await page.locator(`[data-field="${field}"]`).innerText()).replace('−', '-'));

    const free = (await getJson(`${server.url}/v1/scores/AAPL`, demoKey(server.dir, 'free'))).body;
    await visit(free.citation_url);
    expect(await page.getByRole('heading', { name: `Scores as of ${free.as_of}` }).isVisible()).to.equal(true);
    for (const field of ['service_score', 'main_street', 'wall_street', 'divergence_gap']) expect(await shown(field), field).to.equal(free[field]);
    expect(await page.locator('#subscriber-notice').count()).to.equal(0);

    const hobbyist = (await getJson(`${server.url}/v1/scores/AAPL`, demoKey(server.dir, 'hobbyist'))).body;
    expect(hobbyist.as_of > free.as_of).to.equal(true);
    await visit(hobbyist.citation_url);
    const notice = page.locator('#subscriber-notice');
    expect(await notice.isVisible()).to.equal(true);
    expect(await notice.innerText()).to.include(`subscriber data as of ${hobbyist.as_of}`);
    expect(await page.locator('[data-field]').count(), 'no numbers under a subscriber-only citation').to.equal(0);
    expect(await page.locator('#attribution').innerText()).to.equal(`Data: Scores API Main-Street/Wall-Street scores, as of ${hobbyist.as_of} — ${hobbyist.citation_url}`);
    await notice.getByRole('link', { name: 'methodology' }).click();
    expect(await page.getByRole('heading', { name: 'Methodology' }).isVisible()).to.equal(true);
    expect(new URL(page.url()).hash).to.equal('#methodology');

    const file = join(shots, 'stock-AAPL-subscriber-notice.png');
    await page.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).to.be.greaterThan(10_000);
    expect(consoleErrors).to.deep.equal([]);
  });

  it('renders the API reference from /openapi.json, every endpoint listed', async () => {
    const { body: spec } = await getJson(`${server.url}/openapi.json`);
    const operations = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })),
    );
    expect(operations.length).to.be.greaterThan(0);

    const res = await page.goto(`${server.url}/docs`);
    expect(res?.status()).to.equal(200);
    // The server-rendered introduction first, then Redoc's rendering of the document.
    expect(await page.getByRole('heading', { name: 'Scores API reference' }).isVisible()).to.equal(true);
    await page.locator('#redoc [data-section-id^="operation/"]').first().waitFor({ state: 'attached', timeout: 30_000 });
    expect(await page.locator('#redoc [data-section-id^="operation/"]').count()).to.equal(operations.length);

    const rendered = await page.locator('#redoc').innerText();
    for (const op of operations) expect(rendered, `${op.method} ${op.path}`).to.include(op.path);
    expect(rendered).to.include(spec.info.title as string);

    const intro = join(shots, 'docs-intro.png');
    await page.screenshot({ path: intro });
    expect(statSync(intro).size).to.be.greaterThan(10_000);
    await page.locator('#redoc h1').first().scrollIntoViewIfNeeded();
    const reference = join(shots, 'docs-reference.png');
    await page.screenshot({ path: reference });
    expect(statSync(reference).size).to.be.greaterThan(10_000);
    expect(consoleErrors).to.deep.equal([]);
  });
});
