import type { Express } from 'express';
import helmet from 'helmet';
import type { Services } from '../../container.js';
import { CREDIT_PACKS, PLANS, PRO_MONTHLY_PRICE_USD, PRO_OVERLAY, TIERS, type Coverage, type Tier } from '../../../domain/plans.js';
import { RATE_CARD, RATE_KEYS, describeCost } from '../../../domain/rate-card.js';
import { loadStockPage, PUBLIC_ENTITLEMENTS, type StockPageData } from '../../../../queries/get-stock-page/get-stock-page.query.js';
import { TOP100_RANK } from '../../../../queries/shared/visibility.js';
import { GUIDE_LINKS } from './guides.page.js';
import { LICENCE_TERMS } from './license.page.js';
import { html, page, sendHtml, SERVICE_NAME, type SafeHtml } from './html.js';

/** The example's delayed scores change once a day; a minute keeps the page fresh after a publication. */
const CACHE_HOME = 'public, max-age=60';
const EXAMPLE_TICKER = 'AAPL';

/**
 * helmet's browser headers, with the options app.ts gives the other pages. app.ts applies them by
 * path prefix, and '/' as a prefix would cover every route (the API included), so the home page
 * carries them in its own handler chain instead.
 */
const browserHeaders = helmet({ contentSecurityPolicy: false, xFrameOptions: { action: 'deny' } });

const tierName = (t: Tier) => LICENCE_TERMS[t].name;
const count = (n: number) => n.toLocaleString('en-US');
const usd = (n: number) => `$${Number.isInteger(n) ? count(n) : n.toFixed(2)}`;
const delay = (days: number) => (days === 0 ? 'live' : `${count(days)} days`);
const history = (days: number | null) => (days === null ? 'full' : `${count(days)} days`);
const coverage = (c: Coverage) => (c === 'all' ? 'all stocks' : `the ${TOP100_RANK} largest stocks`);
// Scores carry one decimal; written as the stock page writes them (49.0, not 49), never rounded.
const score = (x: number) => (Math.round(x * 10) / 10 === x ? x.toFixed(1) : String(x));

function intro(): SafeHtml {
  return html`<h1>${SERVICE_NAME}</h1>
<p>Each trading day, for 500+ US stocks, the ${SERVICE_NAME} publishes a <strong>Main-Street</strong> score (measured consumer demand), a <strong>Wall-Street</strong> score (analyst sentiment), both 0-100, and their composite <code>service_score</code>. Around them: the history of every score with its restatements (point in time, for backtests), a screener, the divergences between the two scores, webhooks, bulk CSV exports and a hosted MCP server for AI assistants. You call it with an API key; each call costs credits from your plan's monthly allowance.</p>
<p><a href="/account/sign-in"><strong>Sign in or get a free key</strong></a> · <a href="/docs/getting-started">Getting started</a> · <a href="/docs">API reference</a> · <a href="/openapi.json">OpenAPI document</a> · <a href="/license">Licence terms</a></p>`;
}

/** The free tier's view of the example stock: the same query, hence the same row, as its public page. */
function example(data: StockPageData | null, baseUrl: string): SafeHtml {
  const lag = PUBLIC_ENTITLEMENTS.delay_days;
  const name = data ? html`${data.ticker.company} (${EXAMPLE_TICKER})` : EXAMPLE_TICKER;
  const heading = html`<h2 id="example">Example: ${name} on the free tier</h2>`;
  // Only what a free key could fetch: outside the free universe it would get a 403, not scores.
  const row = data?.inFreeUniverse ? data.latest : null;
  if (!row) {
    return html`${heading}
<p class="note">No scores for ${EXAMPLE_TICKER} are published yet (the free tier sees them ${delay(lag)} after publication), so there is nothing to show here.</p>`;
  }
  return html`${heading}
<p>What a free key gets from <code>GET /v1/scores/${EXAMPLE_TICKER}</code> right now. The free tier trails today by ${delay(lag)}, so these scores are as of <strong data-field="date">${row.date}</strong>; paid plans see the latest published day.</p>
<div class="scores" aria-label="${EXAMPLE_TICKER} scores">
<div class="score"><div class="muted">Main Street (consumer demand)</div><div class="value" data-field="main_street">${score(row.main_street)}</div></div>
<div class="score"><div class="muted">Wall Street (analyst sentiment)</div><div class="value" data-field="wall_street">${score(row.wall_street)}</div></div>
<div class="score"><div class="muted">Service score</div><div class="value" data-field="service_score">${score(row.service_score)}</div></div>
</div>
<pre><code>curl -H "X-API-Key: $API_KEY" ${baseUrl}/v1/scores/${EXAMPLE_TICKER}</code></pre>
<p>Its chart and recent history: <a href="/stocks/${EXAMPLE_TICKER}">/stocks/${EXAMPLE_TICKER}</a>.</p>`;
}

function plans(): SafeHtml {
  const tierRows = TIERS.map((t) => {
    const p = PLANS[t];
    const price = p.monthly_price_usd === null ? 'contact us' : usd(p.monthly_price_usd);
    const allowance = p.monthly_allowance === null ? 'unmetered' : count(p.monthly_allowance);
    // No overage price: an unmetered tier has nothing to overrun, a metered one stops at its credits.
    const overage = p.overage_per_1k_usd !== null ? usd(p.overage_per_1k_usd) : p.monthly_allowance === null ? '—' : 'none: calls stop';
    return html`<tr id="tier-${t}"><th scope="row">${tierName(t)}</th><td class="num">${price}</td><td class="num">${allowance}</td><td class="num">${delay(p.delay_days)}</td><td>${coverage(p.coverage)}</td><td class="num">${history(p.history_days)}</td><td class="num">${overage}</td></tr>`;
  });
  const pro = PRO_OVERLAY;
  return html`<h2 id="pricing">Plans and prices</h2>
<table class="tiers" aria-label="Plans">
<thead><tr><th scope="col">Plan</th><th scope="col" class="num">Price a month</th><th scope="col" class="num">Credits a month</th><th scope="col" class="num">Data delay</th><th scope="col">Coverage</th><th scope="col" class="num">History</th><th scope="col" class="num">Overage per 1,000 credits</th></tr></thead>
<tbody>${tierRows}</tbody>
</table>
<h3 id="pro">Pro membership</h3>
<p>On any plan, for ${usd(PRO_MONTHLY_PRICE_USD)} a month: each figure below replaces your plan's own where it is better. Pro never changes the plan itself, so an endpoint that needs a higher plan still needs it.</p>
<table class="pro" aria-label="Pro membership">
<thead><tr><th scope="col" class="num">Price a month</th><th scope="col" class="num">Credits a month</th><th scope="col" class="num">Data delay</th><th scope="col">Coverage</th><th scope="col" class="num">History</th></tr></thead>
<tbody><tr id="pro-overlay"><td class="num">${usd(PRO_MONTHLY_PRICE_USD)}</td><td class="num">${pro.credits === null ? 'unmetered' : count(pro.credits)}</td><td class="num">${delay(pro.delay_days)}</td><td>${coverage(pro.coverage)}</td><td class="num">${history(pro.history_days)}</td></tr></tbody>
</table>
<h3 id="packs">Credit packs</h3>
<p>Prepaid credits, spent after the month's allowance and before any overage; they carry over from month to month.</p>
<table class="packs" aria-label="Credit packs">
<thead><tr><th scope="col" class="num">Credits</th><th scope="col" class="num">Price</th><th scope="col" class="num">Per 1,000 credits</th></tr></thead>
<tbody>${CREDIT_PACKS.map(
    (k) => html`<tr id="${k.id}"><td class="num">${count(k.credits)}</td><td class="num">${usd(k.price_usd)}</td><td class="num">${usd((k.price_usd * 1000) / k.credits)}</td></tr>`,
  )}</tbody>
</table>`;
}

function rateCard(): SafeHtml {
  return html`<h2 id="credits">What each call costs</h2>
<p>Per call, or per row (or theme constituent) returned, so an empty answer to a per-row endpoint costs nothing. REST and MCP cost the same.</p>
<table class="rate-card" aria-label="Credit costs">
<thead><tr><th scope="col">Endpoint</th><th scope="col">Credits</th><th scope="col">Minimum plan</th><th scope="col">MCP tool</th></tr></thead>
<tbody>${RATE_KEYS.map((key) => {
    const e = RATE_CARD[key];
    const routes = e.routes.map((r, i) => html`${i > 0 ? html`<br>` : ''}<code>${r.method} ${r.path}</code>`);
    return html`<tr id="rate-${key}"><td>${routes}</td><td>${describeCost(key)}</td><td>${tierName(e.min_tier)}</td><td>${e.mcp_tool ? html`<code>${e.mcp_tool}</code>` : '—'}</td></tr>`;
  })}</tbody>
</table>`;
}

function access(baseUrl: string): SafeHtml {
  return html`<h2 id="access">How to call it</h2>
<dl>
<dt>REST</dt>
<dd>Every endpoint is under <code>${baseUrl}/v1</code> and takes your key in the <code>X-API-Key</code> header. The <a href="/docs">API reference</a> documents each one; <a href="/openapi.json">/openapi.json</a> is the machine-readable description.</dd>
<dt>Guides</dt>
<dd><ul class="guides">${GUIDE_LINKS.map((l) => html`<li><a href="${l.path}">${l.title}</a></li>`)}</ul></dd>
<dt>MCP</dt>
<dd>A hosted MCP server (streamable HTTP, JSON-RPC over POST) at <a href="/mcp/http"><code>${baseUrl}/mcp/http</code></a>, for AI assistants. It takes the same <code>X-API-Key</code> header, and its tools answer and charge as their REST endpoints do.</dd>
<dt>Licence</dt>
<dd>What you may do with the data depends on your plan: see the <a href="/license">licence terms</a>.</dd>
<dt>Your key</dt>
<dd><a href="/account/sign-in">Sign in</a> to get a free key or manage your account.</dd>
</dl>`;
}

function homePage(data: StockPageData | null, baseUrl: string, demo: boolean): SafeHtml {
  return page({
    demo,
    title: `${SERVICE_NAME}: Main-Street and Wall-Street scores for US stocks`,
    canonical: `${baseUrl}/`,
    description: `${SERVICE_NAME}: daily consumer-demand and analyst-sentiment scores for US stocks, plans and prices.`,
    body: html`${intro()}
${example(data, baseUrl)}
${plans()}
${rateCard()}
${access(baseUrl)}`,
  });
}

/** `GET /`: what the data is, a live free-tier example, the prices, and where to go next. */
export function registerHomePage(app: Express, services: Services): void {
  app.get('/', browserHeaders, async (_req, res) => {
    const data = await loadStockPage(services.reads, EXAMPLE_TICKER, services.clock.now());
    sendHtml(res, 200, homePage(data, services.baseUrl(), services.config.demo), { cacheControl: CACHE_HOME });
  });
}
