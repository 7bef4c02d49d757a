import type { Express } from 'express';
import type { Services } from '../../container.js';
import type { HistoryRow } from '../../../../projections/score-history/score-history.projection.js';
import { citationUrl } from '../../../../queries/shared/provenance.js';
import { attributionLine } from './license.page.js';
import { html, page, sendHtml, SERVICE_NAME, type SafeHtml } from './html.js';
import { loadStockPage, type StockPageData } from '../../../../queries/get-stock-page/get-stock-page.query.js';

/** Delayed data changes once a day; five minutes keeps a cited page cheap to serve. */
const CACHE_OK = 'public, max-age=300';
const CACHE_NOT_FOUND = 'public, max-age=60';
const TABLE_ROWS = 10;
const SYMBOL = /^[A-Z0-9.-]{1,12}$/;

// Scores carry one decimal; show it always so the columns line up (49.0, not 49).
const score = (x: number) => (Math.round(x * 10) / 10 === x ? x.toFixed(1) : String(x));
const signed = (x: number | null) => (x === null ? '—' : `${x > 0 ? '+' : x < 0 ? '−' : ''}${score(Math.abs(x))}`);

/**
 * An inline SVG line of service_score (no script, no external file). The scale spans the
 * window's own range, at least 10 points wide, so that a quiet stock does not draw a flat line.
 */
function sparkline(rows: HistoryRow[]): SafeHtml {
  const w = 600;
  const h = 120;
  const pad = 6;
  const values = rows.map((r) => r.service_score);
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (hi - lo < 10) {
    const mid = (hi + lo) / 2;
    lo = Math.max(0, mid - 5);
    hi = Math.min(100, lo + 10);
  }
  const x = (i: number) => (rows.length === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (rows.length - 1));
  const y = (v: number) => pad + ((hi - v) * (h - 2 * pad)) / (hi - lo);
  const points = rows.map((r, i) => `${x(i).toFixed(1)},${y(r.service_score).toFixed(1)}`).join(' ');
  const last = rows.at(-1)!;
  const first = rows[0]!;
  const label = `service_score from ${first.date} to ${last.date}, ${rows.length} trading days, between ${score(Math.min(...values))} and ${score(Math.max(...values))}, latest ${score(last.service_score)}`;
  return html`<svg class="sparkline" role="img" aria-label="${label}" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" xmlns="http://www.w3.org/2000/svg">
<title>${label}</title>
<rect x="0" y="0" width="${w}" height="${h}" fill="#f8fafc"/>
<polyline fill="none" stroke="#0b5cad" stroke-width="2" stroke-linejoin="round" points="${points}"/>
<circle cx="${x(rows.length - 1).toFixed(1)}" cy="${y(last.service_score).toFixed(1)}" r="3.5" fill="#0b5cad"/>
</svg>
<p class="muted">${first.date} to ${last.date} · low ${score(Math.min(...values))}, high ${score(Math.max(...values))}, latest ${score(last.service_score)} (scale ${score(lo)} to ${score(hi)})</p>`;
}

function historyTable(rows: HistoryRow[]): SafeHtml {
  const recent = rows.slice(-TABLE_ROWS).reverse();
  return html`<table class="history" aria-label="Recent scores">
<thead><tr><th scope="col">Date</th><th scope="col" class="num">Main Street</th><th scope="col" class="num">Wall Street</th><th scope="col" class="num">Service score</th><th scope="col" class="num">Gap</th></tr></thead>
<tbody>${recent.map(
    (r) =>
      html`<tr><td>${r.date}${r.estimated ? '*' : ''}</td><td class="num">${score(r.main_street)}</td><td class="num">${score(r.wall_street)}</td><td class="num">${score(r.service_score)}</td><td class="num">${signed(r.divergence_gap)}</td></tr>`,
  )}</tbody>
</table>
${recent.some((r) => r.estimated) ? html`<p class="muted">* model-backfilled (estimated) row.</p>` : ''}`;
}

function stockPage(d: StockPageData, baseUrl: string): SafeHtml {
  const { symbol, company, sector } = d.ticker;
  const canonical = citationUrl(baseUrl, symbol);
  const latest = d.latest;
  const scores = latest
    ? html`<h2>Scores as of ${latest.date}</h2>
<div class="scores" aria-label="Scores">
<div class="score"><div class="muted">Service score</div><div class="value" data-field="service_score">${score(latest.service_score)}</div></div>
<div class="score"><div class="muted">Main Street (consumer demand)</div><div class="value" data-field="main_street">${score(latest.main_street)}</div></div>
<div class="score"><div class="muted">Wall Street (analyst sentiment)</div><div class="value" data-field="wall_street">${score(latest.wall_street)}</div></div>
<div class="score"><div class="muted">Divergence gap</div><div class="value" data-field="divergence_gap">${signed(latest.divergence_gap)}</div></div>
</div>
${latest.estimated ? html`<p class="muted">This row is model-backfilled (estimated).</p>` : ''}
<h2>Cite this data</h2>
<p class="attribution" id="attribution">${attributionLine(baseUrl, latest.date, symbol)}</p>
<h2>Service score, last ${d.history.length} trading days</h2>
${sparkline(d.history)}
<h2>Recent history</h2>
${historyTable(d.history)}`
    : html`<p class="note">No scores for ${symbol} are public yet: this page shows data ${d.delayDays} days after it is published.</p>`;
  const body = html`<p class="muted"><a href="/docs">${SERVICE_NAME}</a> · ${sector}</p>
<h1>${company} <span class="muted">(${symbol})</span></h1>
<p>Daily Main-Street (measured consumer demand) and Wall-Street (analyst sentiment) scores, 0-100, with their composite service score and the gap between them.</p>
${scores}
<h2>Live data</h2>
<p class="note">This public page shows the free tier's delayed data: it trails the current date by ${d.delayDays} days${d.asOf ? html`, so it is as of <strong>${d.asOf}</strong>` : ''}. Live scores, deeper history and the full universe need an API key: call <code>GET ${baseUrl}/v1/scores/${symbol}</code> with your key in the <code>X-API-Key</code> header.${
    d.inFreeUniverse ? '' : html` Free keys cover the 100 largest stocks; ${symbol} needs a paid plan or the Pro membership.`
  }</p>
<p>See the <a href="/docs">API reference</a> and the <a href="/license">licence terms</a> (the free tier asks for the attribution line above).</p>`;
  return page({
    title: `${company} (${symbol}) scores — ${SERVICE_NAME}`,
    canonical,
    description: `${company} (${symbol}) Main-Street and Wall-Street scores${d.asOf ? `, as of ${d.asOf}` : ''}.`,
    body,
  });
}

function notFoundPage(requested: string): SafeHtml {
  const shown = requested.length > 40 ? `${requested.slice(0, 40)}…` : requested;
  return page({
    title: `Unknown ticker — ${SERVICE_NAME}`,
    body: html`<h1>Unknown ticker</h1>
<p>No listed stock has the symbol <code>${shown}</code>.</p>
<p>Every covered symbol is listed by <code>GET /v1/coverage</code>; see the <a href="/docs">API reference</a>.</p>`,
  });
}

/**
 * `GET /stocks/{ticker}`: the canonical page every `citation_url` points at. Public (no key), so
 * it shows only what the free tier sees; lower-case symbols redirect to the canonical spelling.
 */
export function registerStockPage(app: Express, services: Services): void {
  app.get('/stocks/:ticker', async (req, res) => {
    const requested = req.params.ticker;
    const symbol = requested.trim().toUpperCase();
    if (!SYMBOL.test(symbol)) return sendHtml(res, 404, notFoundPage(requested), { cacheControl: CACHE_NOT_FOUND });
    if (symbol !== requested) return res.redirect(301, `/stocks/${encodeURIComponent(symbol)}`);
    const data = await loadStockPage(services.reads, symbol, services.clock.now());
    if (!data) return sendHtml(res, 404, notFoundPage(requested), { cacheControl: CACHE_NOT_FOUND });
    sendHtml(res, 200, stockPage(data, services.baseUrl()), { cacheControl: CACHE_OK });
  });
}
