import { expect } from 'chai';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { tickers } from '../../projections/reference/reference.projection.js';
import { TOP100_RANK } from '../../queries/shared/visibility.js';
import { STATIC_PAGE_CSP } from '../../src/app/http/pages/html.js';
import { LICENCE_TERMS } from '../../src/app/http/pages/license.page.js';
import { CREDIT_PACKS, PLANS, PRO_MONTHLY_PRICE_USD, PRO_OVERLAY, TIERS, type Coverage } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS } from '../../src/domain/rate-card.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';
import { textOf } from '../support/html-text.js';

const BASE = 'https://api.example.test';


async function getPage(url: string, init: RequestInit = {}) {
  const res = await fetch(url, { redirect: 'manual', ...init });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** The text of each cell of the table row with this id. */
function rowCells(body: string, id: string): string[] {
  const row = new RegExp(`<tr id="${id}">([\\s\\S]*?)</tr>`).exec(body)?.[1];
  expect(row, `row ${id}`).to.be.a('string');
  return [...row!.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((m) => textOf(m[1]!));
}

// How a reader expects each figure of plans.ts to be written.
const n = (x: number) => x.toLocaleString('en-US');
const usd = (x: number) => (Number.isInteger(x) ? `$${n(x)}` : `$${x.toFixed(2)}`);
const delay = (d: number) => (d === 0 ? 'live' : `${d} days`);
const depth = (d: number | null) => (d === null ? 'full' : `${n(d)} days`);
const reach = (c: Coverage) => (c === 'all' ? 'all stocks' : `the ${TOP100_RANK} largest stocks`);

describe('GET /, the home page', () => {
  let server: TestServer;
  let freeKey: string;
  before(async () => {
    // Monday 2019-04-01, noon: the free tier sees Monday 2019-03-25, a paid key Friday 2019-03-29.
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: BASE } });
    freeKey = (await createAccountWithKey(server.services, { tier: 'free' })).key;
    await server.services.runner.waitForHead();
  });
  after(() => server?.stop());

  it('is an HTML page saying what the data is', async () => {
    const { status, headers, body } = await getPage(`${server.url}/`);
    expect(status).to.equal(200);
    expect(headers.get('content-type')).to.match(/^text\/html; charset=utf-8/);
    const text = textOf(body);
    for (const words of ['Main-Street', 'consumer demand', 'Wall-Street', 'analyst sentiment', 'service_score', '500+ US stocks', 'restatements', 'screener', 'divergences', 'webhooks', 'bulk CSV exports', 'MCP server']) {
      expect(text, words).to.include(words);
    }
    expect(body).to.include(`<link rel="canonical" href="${BASE}/">`);
  });

  it('shows the AAPL scores a free key gets from GET /v1/scores/AAPL, and links to its page', async () => {
    const api = await getJson(`${server.url}/v1/scores/AAPL`, freeKey);
    expect(api.status).to.equal(200);
    const { body } = await getPage(`${server.url}/`);
    const shown = (field: string) => new RegExp(`data-field="${field}">([^<]+)<`).exec(body)?.[1];
    expect(shown('date')).to.equal(api.body.date);
    expect(Number(shown('main_street'))).to.equal(api.body.main_street);
    expect(Number(shown('wall_street'))).to.equal(api.body.wall_street);
    expect(Number(shown('service_score'))).to.equal(api.body.service_score);
    expect(textOf(body)).to.include('Apple Inc. (AAPL)').and.include(`trails today by ${PLANS.free.delay_days} days`);
    expect(body).to.include('href="/stocks/AAPL"');

    // The delayed view, not the live one.
    const live = await getJson(`${server.url}/v1/scores/AAPL`, demoKey(server.dir, 'quant'));
    expect(live.body.date > api.body.date, 'a paid key sees newer data than the example').to.equal(true);
    expect([...textOf(body).matchAll(/\d{4}-\d{2}-\d{2}/g)].map((m) => m[0]).filter((d) => d > api.body.date)).to.deep.equal([]);
  });

  it('has one row per tier with the figures of PLANS', async () => {
    const { body } = await getPage(`${server.url}/`);
    const tbody = /<table class="tiers"[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1] ?? '';
    expect(tbody.match(/<tr /g)).to.have.length(TIERS.length);
    for (const t of TIERS) {
      const p = PLANS[t];
      expect(rowCells(body, `tier-${t}`), t).to.deep.equal([
        LICENCE_TERMS[t].name,
        p.monthly_price_usd === null ? 'contact us' : usd(p.monthly_price_usd),
        p.monthly_allowance === null ? 'unmetered' : n(p.monthly_allowance),
        delay(p.delay_days),
        reach(p.coverage),
        depth(p.history_days),
        p.overage_per_1k_usd !== null ? usd(p.overage_per_1k_usd) : p.monthly_allowance === null ? '—' : 'none: calls stop',
      ]);
    }
  });

  it('shows the Pro membership and the credit packs of plans.ts', async () => {
    const { body } = await getPage(`${server.url}/`);
    expect(rowCells(body, 'pro-overlay')).to.deep.equal([
      usd(PRO_MONTHLY_PRICE_USD),
      n(PRO_OVERLAY.credits!),
      delay(PRO_OVERLAY.delay_days),
      reach(PRO_OVERLAY.coverage),
      depth(PRO_OVERLAY.history_days),
    ]);
    for (const pack of CREDIT_PACKS) {
      expect(rowCells(body, pack.id), pack.id).to.deep.equal([n(pack.credits), usd(pack.price_usd), usd((pack.price_usd / pack.credits) * 1000)]);
    }
  });

  it('lists every endpoint of the rate card with its cost, unit and minimum plan', async () => {
    const { body } = await getPage(`${server.url}/`);
    const tbody = /<table class="rate-card"[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1] ?? '';
    expect(tbody.match(/<tr /g)).to.have.length(RATE_KEYS.length);
    for (const key of RATE_KEYS) {
      const e = RATE_CARD[key];
      const [routes, cost, minimum, tool] = rowCells(body, `rate-${key}`);
      for (const r of e.routes) expect(routes, key).to.include(`${r.method} ${r.path}`);
      if (e.credits === 0) expect(cost, key).to.equal('free');
      else expect(cost, key).to.match(new RegExp(`^${e.credits} credits? per ${e.unit}\\b`));
      expect(minimum, key).to.equal(LICENCE_TERMS[e.min_tier].name);
      expect(tool, key).to.equal(e.mcp_tool ?? '—');
    }
  });

  it('links to sign-in, the docs, the OpenAPI document, the MCP endpoint and the licence', async () => {
    const { body } = await getPage(`${server.url}/`);
    for (const href of ['/account/sign-in', '/docs', '/openapi.json', '/mcp/http', '/license']) expect(body, href).to.include(`href="${href}"`);
    const mcp = textOf(/<dt>MCP<\/dt>\s*<dd>([\s\S]*?)<\/dd>/.exec(body)?.[1] ?? '');
    expect(mcp).to.include(`${BASE}/mcp/http`).and.include('same X-API-Key header');
  });

  it('is a static page: the strict policy, no script, a short public cache', async () => {
    const { headers, body } = await getPage(`${server.url}/`);
    expect(headers.get('content-security-policy')).to.equal(STATIC_PAGE_CSP);
    expect(body).to.not.match(/<script/i);
    expect(headers.get('cache-control')).to.equal('public, max-age=60');
  });

  it("carries helmet's browser headers, and they stay off the API", async () => {
    const { headers } = await getPage(`${server.url}/`);
    expect(headers.get('x-frame-options')).to.equal('DENY');
    expect(headers.get('referrer-policy')).to.equal('no-referrer');
    expect(headers.get('cross-origin-opener-policy')).to.equal('same-origin');
    expect(headers.get('x-content-type-options')).to.equal('nosniff');
    expect(headers.get('strict-transport-security')).to.match(/^max-age=\d+/);

    for (const path of ['/v1/scores/AAPL', '/healthz', '/openapi.json']) {
      const other = await getJson(`${server.url}${path}`, freeKey);
      expect(other.headers.get('referrer-policy'), path).to.equal(null);
      expect(other.headers.get('cross-origin-opener-policy'), path).to.equal(null);
    }
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const { status, headers, body } = await getPage(`${server.url}/`, { method: 'HEAD' });
    expect(status).to.equal(200);
    expect(headers.get('content-type')).to.match(/^text\/html/);
    expect(headers.get('content-security-policy')).to.equal(STATIC_PAGE_CSP);
    expect(headers.get('referrer-policy')).to.equal('no-referrer');
    expect(body).to.equal('');
  });

  it('is what the shared header links to, as Home and Pricing', async () => {
    const { body } = await getPage(`${server.url}/stocks/AAPL`);
    const header = /<header class="site">([\s\S]*?)<\/header>/.exec(body)?.[1] ?? '';
    expect(header).to.include('href="/"').and.include('href="/#pricing"');
    expect((await getPage(`${server.url}/`)).body).to.include('id="pricing"');
  });

  // Last: it renames AAPL in this server's reference data.
  it('escapes text from the read models', async () => {
    const aapl = (await server.services.reads.get(tickers, 'AAPL'))!;
    const evil = 'Apple <script>alert(1)</script> & "Sons"';
    const list = async (company: string) => {
      const row = JSON.stringify({ type: 'ticker', symbol: 'AAPL', company, sector: aapl.sector, size_rank: aapl.size_rank });
      const written = await ingestRows(server.services.events, server.services.clock, parseIngestFile(row, 'jsonl'));
      if (written.position) await server.services.runner.waitFor(written.position);
    };
    await list(evil);
    try {
      const { body } = await getPage(`${server.url}/`);
      expect(body).to.include('Apple &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Sons&quot;');
      expect(body).to.not.match(/<script/i);
    } finally {
      await list(aapl.company);
    }
  });
});

describe('GET / on an empty store', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { SCORES_DEMO: 'off' } });
  });
  after(() => server?.stop());

  it('says there is no example yet, and still shows the plans', async () => {
    const { status, body } = await getPage(`${server.url}/`);
    expect(status).to.equal(200);
    const text = textOf(body);
    expect(text).to.include('No scores for AAPL are published yet');
    expect(body).to.not.include('data-field="service_score"');
    expect(body.match(/<tr id="tier-/g)).to.have.length(TIERS.length);
  });
});
