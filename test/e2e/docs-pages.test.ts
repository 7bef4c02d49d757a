/**
 * The docs served from the API's own host (issue 45 item 3), in Debian's Chromium at a phone and a
 * desktop width: each guide and the reference open with no request to another host, no console
 * error and no sideways scroll; a guide shows its headings, the guides' nav and the demo banner;
 * the reference shows an operation's curl sample, and its Python SDK and TypeScript SDK samples in
 * tabs of their own.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { GUIDES } from '../../src/app/http/generated/docs.js';
import { GUIDE_LINKS } from '../../src/app/http/pages/guides.page.js';
import type { TestServer } from '../support/server.js';
import { startTestServer } from '../support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const WIDTHS = [390, 1280] as const;

const hrefs = async (links: Locator): Promise<(string | null)[]> => Promise.all((await links.all()).map((a) => a.getAttribute('href')));

describe('Docs pages in a real browser (390 and 1280 px)', function () {
  let server: TestServer;
  let browser: Browser;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Opens a path at a width, recording every request to another host and every console error. */
  async function visit(path: string, width: number, ready: (p: Page) => Promise<unknown>): Promise<{ page: Page; outside: string[]; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width, height: width > 600 ? 900 : 844 } });
    const outside: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      if (!/^(data|blob):/.test(r.url()) && new URL(r.url()).origin !== server.url) outside.push(r.url());
    });
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    const res = await page.goto(`${server.url}${path}`);
    expect(res?.status(), path).to.equal(200);
    await ready(page);
    await page.waitForLoadState('networkidle');
    return { page, outside, errors };
  }

  async function fits(page: Page, width: number, path: string): Promise<void> {
    const scrollWidth = Number(await page.evaluate('document.documentElement.scrollWidth'));
    expect(scrollWidth, `${path} is ${scrollWidth} px wide at ${width}`).to.be.at.most(width);
  }

  it('lists the nine guides the issue names, the errors page among them', () => {
    expect(GUIDE_LINKS.map((l) => l.path)).to.deep.equal([
      '/docs/getting-started',
      '/docs/sync',
      '/docs/webhooks',
      '/docs/exports',
      '/docs/ledger',
      '/docs/methodology',
      '/docs/errors',
      '/docs/sdks',
      '/docs/mcp',
    ]);
  });

  for (const width of WIDTHS) {
    for (const link of GUIDE_LINKS) {
      it(`${link.path} at ${width} px: its headings, the guides' nav, the demo banner; nothing from another host, no console error, no sideways scroll`, async () => {
        const { page, outside, errors } = await visit(link.path, width, (p) => p.getByRole('heading', { level: 1 }).waitFor());
        try {
          expect(await page.getByRole('heading', { level: 1 }).innerText()).to.equal(link.title);
          const guide = GUIDES.find((g) => `/docs/${g.slug}` === link.path);
          const headings = guide ? guide.headings.filter((h) => h.depth <= 3) : [];
          if (guide) expect(headings.length, link.path).to.be.greaterThan(1);
          for (const h of headings) {
            const el = page.locator(`h${h.depth}[id="${h.id}"]`);
            expect(await el.count(), `${link.path}#${h.id}`).to.equal(1);
            expect((await el.innerText()).trim()).to.equal(h.text.trim().replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'"));
          }
          const nav = page.getByRole('navigation', { name: 'Guides' });
          expect(await hrefs(nav.getByRole('link'))).to.deep.equal(['/docs', ...GUIDE_LINKS.map((l) => l.path)]);
          expect(await nav.locator('[aria-current="page"]').getAttribute('href')).to.equal(link.path);
          expect(await page.getByRole('note', { name: 'Demo data' }).isVisible()).to.equal(true);
          await fits(page, width, link.path);
          // A code block keeps its lines and scrolls inside itself, within the page's width.
          for (const pre of await page.locator('pre.code').all()) {
            const box = await pre.boundingBox();
            expect(box!.x + box!.width, `${link.path}: a code block inside the page`).to.be.at.most(width);
          }
          expect(outside, `requests to another host from ${link.path}`).to.deep.equal([]);
          expect(errors, `console errors on ${link.path}`).to.deep.equal([]);
        } finally {
          await page.close();
        }
      });
    }

    it(`/docs at ${width} px: links the guides and shows an operation's curl, Python SDK and TypeScript SDK samples; nothing from another host, no console error, no sideways scroll`, async () => {
      const { page, outside, errors } = await visit('/docs', width, (p) => p.locator('#redoc [data-section-id^="operation/"]').first().waitFor({ state: 'attached', timeout: 60_000 }));
      try {
        const guides = page.getByRole('navigation', { name: 'Guides' });
        expect(await hrefs(guides.getByRole('link'))).to.deep.equal(GUIDE_LINKS.map((l) => l.path));
        const section = page.locator('#redoc [data-section-id="operation/getScore"]');
        await section.scrollIntoViewIfNeeded();
        const sample = section.locator('pre', { hasText: 'X-API-Key: $SCORES_API_KEY' }).first();
        await sample.waitFor({ state: 'visible', timeout: 30_000 });
        expect(await sample.innerText()).to.include(`curl "${server.running.baseUrl}/v1/scores/AAPL"`);
        expect(await section.getByRole('tab', { name: 'curl' }).count()).to.be.greaterThan(0);
        // The SDKs' samples in tabs of their own, after curl's: each shows its call once chosen.
        for (const [tab, call] of [
          ['Python SDK', 'client.get_score("AAPL")'],
          ['TypeScript SDK', "await scores.getScore('AAPL')"],
        ] as const) {
          const tabs = section.getByRole('tab', { name: tab, exact: true });
          expect(await tabs.count(), `the ${tab} tab`).to.be.greaterThan(0);
          await tabs.first().click();
          await section.locator('pre', { hasText: call }).first().waitFor({ state: 'visible', timeout: 30_000 });
        }
        await fits(page, width, '/docs');
        expect(outside, 'requests to another host from /docs').to.deep.equal([]);
        expect(errors, 'console errors on /docs').to.deep.equal([]);
      } finally {
        await page.close();
      }
    });
  }
});
