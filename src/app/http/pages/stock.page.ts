import type { Express } from 'express';
import type { Services } from '../../container.js';
import type { HistoryRow, ScoreVersion } from '../../../../projections/score-history/score-history.projection.js';
import { gapOf } from '../../../../projections/shared/score-row.js';
import { SOURCE_STATEMENT, citationUrl } from '../../../../queries/shared/provenance.js';
import { isDateString, toDateString } from '../../../domain/trading-calendar.js';
import { attributionLine } from './license.page.js';
import { html, page, raw, sendHtml, SERVICE_NAME, type SafeHtml } from './html.js';
import { STOCK_CHART_JS, stockChartData } from './stock-chart.js';
import { projectRoot } from '../../../core/paths.js';
import { join } from 'node:path';
import { PUBLIC_ENTITLEMENTS, loadStockPage, type StockPageData } from '../../../../queries/get-stock-page/get-stock-page.query.js';

/** Delayed data changes once a day; five minutes keeps a cited page cheap to serve. */
const CACHE_OK = 'public, max-age=300';
const CACHE_NOT_FOUND = 'public, max-age=60';
const TABLE_ROWS = 10;
const SYMBOL = /^[A-Z0-9.-]{1,12}$/;
const PUBLIC_HISTORY_DAYS = PUBLIC_ENTITLEMENTS.history_days;

/** The stock page runs its own chart script and uPlot, both served here; nothing else loads. */
const STOCK_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const CHART_HEAD = raw(`<link rel="stylesheet" href="/assets/uPlot.min.css"><script src="/assets/uPlot.iife.min.js" defer></script><script src="/assets/stock-chart.js" defer></script>`);

// Scores carry one decimal; show it always so the columns line up (49.0, not 49).
const score = (x: number) => (Math.round(x * 10) / 10 === x ? x.toFixed(1) : String(x));
const signed = (x: number | null) => (x === null ? '—' : `${x > 0 ? '+' : x < 0 ? '−' : ''}${score(Math.abs(x))}`);

/**
 * The chart's outline without JavaScript: an inline SVG of the three series on the fixed 0-100
 * scale, replaced by the uPlot chart (dated axes, legend with values) when scripts run.
 */
function sparkline(rows: HistoryRow[]): SafeHtml {
  const w = 600;
  const h = 160;
  const pad = 6;
  const values = rows.map((r) => r.service_score);
  const x = (i: number) => (rows.length === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (rows.length - 1));
  const y = (v: number) => pad + ((100 - v) * (h - 2 * pad)) / 100;
  const line = (pick: (r: HistoryRow) => number) => rows.map((r, i) => `${x(i).toFixed(1)},${y(pick(r)).toFixed(1)}`).join(' ');
  const last = rows.at(-1)!;
  const first = rows[0]!;
  const label = `Scores from ${first.date} to ${last.date}, ${rows.length} trading days, on a 0-100 scale: service score between ${score(Math.min(...values))} and ${score(Math.max(...values))}, latest ${score(last.service_score)}`;
  return html`<svg class="sparkline" role="img" aria-label="${label}" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" xmlns="http://www.w3.org/2000/svg">
<title>${label}</title>
<rect x="0" y="0" width="${w}" height="${h}" fill="#f8fafc"/>
<polyline fill="none" stroke="#b45309" stroke-width="1.5" points="${line((r) => r.main_street)}"/>
<polyline fill="none" stroke="#6d28d9" stroke-width="1.5" stroke-dasharray="6 4" points="${line((r) => r.wall_street)}"/>
<polyline fill="none" stroke="#0b5cad" stroke-width="2.5" stroke-linejoin="round" points="${line((r) => r.service_score)}"/>
</svg>`;
}

/** The chart of the page's history: uPlot over the JSON beside it, the SVG outline until then. */
function scoreChart(rows: HistoryRow[]): SafeHtml {
  const values = rows.map((r) => r.service_score);
  const first = rows[0]!;
  const last = rows.at(-1)!;
  const restated = rows.filter((r) => r.version > 1).length;
  return html`<div id="score-chart" class="chart" role="figure" aria-label="Service score, Main Street and Wall Street, ${first.date} to ${last.date}, 0-100">${sparkline(rows)}</div>
<script type="application/json" id="score-data">${raw(JSON.stringify(stockChartData(rows)).replace(/</g, '\\u003c'))}</script>
<p class="muted">${first.date} to ${last.date}, on the full 0-100 scale · service score low ${score(Math.min(...values))}, high ${score(Math.max(...values))}, latest ${score(last.service_score)}${
    restated > 0 ? ` · ${restated} restated ${restated === 1 ? 'day' : 'days'} marked with a red ring` : ''
  }</p>`;
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

/** What the numbers are and how a citation works: linked from the notice of a subscriber-only date. */
function methodology(delayDays: number): SafeHtml {
  return html`<h2 id="methodology">Methodology</h2>
<p>${SOURCE_STATEMENT}</p>
<ul>
<li>Main Street and Wall Street are 0-100; the service score is their composite, 0-100; the divergence gap is Main Street − Wall Street, positive when consumer demand runs ahead of analysts.</li>
<li>Scores are published once a day after the close. A correction restates a row: the page shows its current values and, below them, the values it had before, each with the interval it was current. A row marked estimated was back-filled by a model.</li>
<li>An API response about one stock names the page to cite with its date, <code>/stocks/{ticker}?as_of=YYYY-MM-DD</code>. That page shows the numbers of that date once they are public (${delayDays} days after publication, the free tier's delay); until then it says that the cited values are subscriber data, and shows no other numbers in their place.</li>
</ul>`;
}

/** A restated row's earlier values: a response served while one of them was current cited it. */
function earlierValues(versions: readonly ScoreVersion[], current: HistoryRow): SafeHtml {
  return html`<p id="restated">These are the values of ${current.date} as restated at ${current.restated_at}. A response served before then showed the values it had then:</p>
<table class="versions" aria-label="Earlier values">
<thead><tr><th scope="col">Current from</th><th scope="col">until</th><th scope="col" class="num">Main Street</th><th scope="col" class="num">Wall Street</th><th scope="col" class="num">Service score</th><th scope="col" class="num">Gap</th></tr></thead>
<tbody>${versions.map(
    (v) =>
      html`<tr><td>${v.valid_from}</td><td>${v.valid_to}</td><td class="num">${score(v.main_street)}</td><td class="num">${score(v.wall_street)}</td><td class="num">${score(v.service_score)}</td><td class="num">${signed(gapOf(v))}</td></tr>`,
  )}</tbody>
</table>`;
}

function scoresOf(d: StockPageData, latest: HistoryRow, baseUrl: string, symbol: string): SafeHtml {
  const cited = d.cited ?? latest.date;
  return html`<h2>Scores as of ${cited}</h2>
${latest.date !== cited ? html`<p class="muted">${cited} has no row of its own: these are the scores of ${latest.date}, the latest on or before it.</p>` : ''}
<div class="scores" aria-label="Scores">
<div class="score"><div class="muted">Service score</div><div class="value" data-field="service_score">${score(latest.service_score)}</div></div>
<div class="score"><div class="muted">Main Street (consumer demand)</div><div class="value" data-field="main_street">${score(latest.main_street)}</div></div>
<div class="score"><div class="muted">Wall Street (analyst sentiment)</div><div class="value" data-field="wall_street">${score(latest.wall_street)}</div></div>
<div class="score"><div class="muted">Divergence gap</div><div class="value" data-field="divergence_gap">${signed(latest.divergence_gap)}</div></div>
</div>
${latest.estimated ? html`<p class="muted">This row is model-backfilled (estimated).</p>` : ''}
${d.earlier.length > 0 ? earlierValues(d.earlier, latest) : ''}
<h2>Cite this data</h2>
<p class="attribution" id="attribution">${attributionLine(baseUrl, cited, symbol)}</p>
${
  d.history.length > 0
    ? html`<h2>Scores, last ${d.history.length} trading days</h2>
${scoreChart(d.history)}
<h2>Recent history</h2>
${historyTable(d.history)}`
    : html`<p class="muted">${cited} is older than the ${PUBLIC_HISTORY_DAYS} days of history the free tier shows, so no chart or table goes with it.</p>`
}`;
}

/** A cited date the free delay does not reach yet: the date and the citation, no numbers at all. */
function subscriberNotice(d: StockPageData, baseUrl: string, symbol: string): SafeHtml {
  const cited = d.cited!;
  return html`<h2>Scores as of ${cited}</h2>
<p class="note" id="subscriber-notice">The values cited with this page are <strong>subscriber data as of ${cited}</strong>, not shown publicly: subscribers (paid plans and the Pro membership) see scores the day they are published, and this public page shows them ${d.delayDays} days later, from <strong>${d.publicFrom}</strong>. How the scores are made: <a href="#methodology">methodology</a>.</p>
<h2>Cite this data</h2>
<p class="attribution" id="attribution">${attributionLine(baseUrl, cited, symbol)}</p>
${d.asOf ? html`<p>The latest public scores of ${symbol} are on <a href="/stocks/${symbol}">its page</a>.</p>` : ''}`;
}

function stockPage(d: StockPageData, baseUrl: string, demo: boolean): SafeHtml {
  const { symbol, company, sector } = d.ticker;
  const canonical = d.cited ? citationUrl(baseUrl, { asOf: d.cited, ticker: symbol }) : `${baseUrl}/stocks/${encodeURIComponent(symbol)}`;
  const scores = d.subscriberOnly
    ? subscriberNotice(d, baseUrl, symbol)
    : d.latest
      ? scoresOf(d, d.latest, baseUrl, symbol)
      : html`<p class="note">No scores for ${symbol} are public yet: this page shows data ${d.delayDays} days after it is published.</p>`;
  const shownAsOf = d.subscriberOnly ? null : (d.cited ?? d.asOf);
  const body = html`<p class="muted"><a href="/docs">${SERVICE_NAME}</a> · ${sector}</p>
<h1>${company} <span class="muted">(${symbol})</span></h1>
<p>Daily Main-Street (measured consumer demand) and Wall-Street (analyst sentiment) scores, 0-100, with their composite service score and the gap between them.</p>
${scores}
<h2>Live data</h2>
<p class="note">This public page shows the free tier's delayed data: it trails the current date by ${d.delayDays} days${shownAsOf && !d.cited ? html`, so it is as of <strong>${shownAsOf}</strong>` : ''}. Live scores, deeper history and the full universe need an API key: call <code>GET ${baseUrl}/v1/scores/${symbol}</code> with your key in the <code>X-API-Key</code> header.${
    d.inFreeUniverse ? '' : html` Free keys cover the 100 largest stocks; ${symbol} needs a paid plan or the Pro membership.`
  }</p>
<p>See the <a href="/docs">API reference</a> and the <a href="/license">licence terms</a> (the free tier asks for the attribution line above).</p>
${methodology(d.delayDays)}`;
  return page({
    demo,
    head: CHART_HEAD,
    title: `${company} (${symbol}) scores${d.cited ? ` as of ${d.cited}` : ''} — ${SERVICE_NAME}`,
    canonical,
    description: d.subscriberOnly
      ? `${company} (${symbol}) Main-Street and Wall-Street scores as of ${d.cited}: subscriber data, public from ${d.publicFrom}.`
      : `${company} (${symbol}) Main-Street and Wall-Street scores${shownAsOf ? `, as of ${shownAsOf}` : ''}.`,
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

function noScoresPage(d: StockPageData): SafeHtml {
  return page({
    title: `No scores as of ${d.cited} — ${SERVICE_NAME}`,
    body: html`<h1>No scores for ${d.ticker.symbol} as of ${d.cited}</h1>
<p>${d.ticker.company} (${d.ticker.symbol}) has no scores on or before ${d.cited}. See <a href="/stocks/${d.ticker.symbol}">its page</a> for the latest public scores.</p>`,
  });
}

function badDatePage(reason: string): SafeHtml {
  return page({
    title: `Bad date — ${SERVICE_NAME}`,
    body: html`<h1>Bad date</h1>
<p>${reason}</p>
<p>A citation names its date as <code>?as_of=YYYY-MM-DD</code>, a real calendar date no later than today (UTC), as in the <code>citation_url</code> of an API response.</p>`,
  });
}

/** The `as_of` of a citation: absent (or empty), a date, or why it is none. */
function citedDate(query: unknown, today: string): { date: string | null } | { error: string } {
  if (query === undefined || query === '') return { date: null };
  if (typeof query !== 'string') return { error: 'as_of must be given once.' };
  const shown = query.length > 40 ? `${query.slice(0, 40)}…` : query;
  if (!isDateString(query)) return { error: `as_of must be a date YYYY-MM-DD, not “${shown}”.` };
  if (query > today) return { error: `as_of ${query} is after today (${today}): no scores are published for it yet.` };
  return { date: query };
}

/**
 * `GET /stocks/{ticker}`: the page every `citation_url` of one stock points at, dated by
 * `?as_of=` (the latest public day without it). Public (no key), so it shows only what the free
 * tier sees: a cited date the free delay does not reach yet gets a notice instead of numbers.
 * Lower-case symbols redirect to the canonical spelling; a bad `as_of` is a 400 page, a ticker
 * no stock has (or a cited date before its first scores) a 404 page.
 */
export function registerStockPage(app: Express, services: Services): void {
  app.get('/stocks/:ticker', async (req, res) => {
    const requested = req.params.ticker;
    const symbol = requested.trim().toUpperCase();
    if (!SYMBOL.test(symbol)) return sendHtml(res, 404, notFoundPage(requested), { cacheControl: CACHE_NOT_FOUND });
    const query = req.url.indexOf('?');
    if (symbol !== requested) return res.redirect(301, `/stocks/${encodeURIComponent(symbol)}${query < 0 ? '' : req.url.slice(query)}`);
    const now = services.clock.now();
    const cited = citedDate(req.query['as_of'], toDateString(now));
    if ('error' in cited) return sendHtml(res, 400, badDatePage(cited.error), { cacheControl: CACHE_NOT_FOUND });
    const data = await loadStockPage(services.reads, symbol, now, cited.date);
    if (!data) return sendHtml(res, 404, notFoundPage(requested), { cacheControl: CACHE_NOT_FOUND });
    if (data.cited && !data.subscriberOnly && !data.latest) return sendHtml(res, 404, noScoresPage(data), { cacheControl: CACHE_NOT_FOUND });
    sendHtml(res, 200, stockPage(data, services.baseUrl(), services.config.demo), { cacheControl: CACHE_OK, csp: STOCK_CSP });
  });
  // uPlot from the package itself, and the chart script: nothing from a CDN.
  const uplot = join(projectRoot(), 'node_modules/uplot/dist');
  app.get('/assets/uPlot.iife.min.js', (_req, res) => res.sendFile(join(uplot, 'uPlot.iife.min.js'), { maxAge: '1d' }));
  app.get('/assets/uPlot.min.css', (_req, res) => res.sendFile(join(uplot, 'uPlot.min.css'), { maxAge: '1d' }));
  app.get('/assets/stock-chart.js', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/javascript').send(STOCK_CHART_JS);
  });
}
