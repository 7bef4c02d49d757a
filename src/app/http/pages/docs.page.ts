import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Express } from 'express';
import type { Services } from '../../container.js';
import { statusOf, titleOf, type ErrorCode } from '../../../core/errors.js';
import { PLANS, TIERS, type Tier } from '../../../domain/plans.js';
import { RATE_CARD, RATE_KEYS, type RateCardEntry } from '../../../domain/rate-card.js';
import { problemOf } from '../../../web/problem.js';
import { html, page, raw, sendHtml, SERVICE_NAME, type SafeHtml } from './html.js';
import { GUIDE_LINKS, guidesNav } from './guides.page.js';
import { LICENCE_TERMS } from './license.page.js';

/** Redoc's self-contained browser bundle, served from node_modules: nothing is fetched from a CDN. */
const REDOC_BUNDLE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/**
 * The one outside address in Redoc's bundle: the sidebar's "API docs by Redocly" image, which no
 * option switches off. Served as is, every visitor's browser would ask Redocly's CDN for it (and
 * log an error on a network without outside access).
 */
const REDOCLY_LOGO_URL = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

/** An empty image written into the page itself: the attribution keeps its text, and nothing is fetched. */
const NO_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

/**
 * The bundle as served: read once, with the logo's address replaced. test/e2e/docs-pages.test.ts
 * records every request the reference makes and fails for one to another host, so an upgrade that
 * adds another outside address is caught there.
 */
export function redocBundle(): Buffer {
  return Buffer.from(readFileSync(REDOC_BUNDLE, 'utf8').replaceAll(REDOCLY_LOGO_URL, NO_LOGO));
}

/**
 * Starts Redoc on the live /openapi.json (so the reference always shows this server's base URL),
 * and makes each code sample's scrolling box focusable as it appears. A file, not an inline
 * script, so the page's policy can forbid inline scripts.
 */
const REDOC_INIT = `'use strict';
Redoc.init('/openapi.json', {
  expandResponses: '200',
  hideDownloadButton: false,
  jsonSampleExpandLevel: 3,
  nativeScrollbars: true,
  pathInMiddlePanel: true,
  theme: { typography: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif', headings: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif' } } }
}, document.getElementById('redoc'));
// A code sample's box scrolls sideways: it takes focus so that a keyboard can scroll it too.
new MutationObserver(function () {
  document.querySelectorAll('#redoc [role="tabpanel"] pre:not([tabindex])').forEach(function (pre) { pre.setAttribute('tabindex', '0'); });
}).observe(document.getElementById('redoc'), { childList: true, subtree: true });
`;

/**
 * Redoc injects its styles and runs its search index in a blob worker. Nothing comes from another
 * host: its logo, the one outside asset of the bundle, is replaced as the bundle is served.
 */
const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const CACHE_DOCS = 'public, max-age=300';

/** The errors page's `coverage` example: Domino's, size rank 422 of the listed universe, far outside `top100`. */
export const COVERAGE_EXAMPLE = 'DPZ';

/** What each problem `code` means and what the caller can do about it: `/docs/errors#<code>`. */
const ERROR_DOCS: Record<ErrorCode, { meaning: string; fix: string }> = {
  bad_request: {
    meaning:
      'A parameter is malformed: a date that is not a real YYYY-MM-DD date, an entry of `tickers` that is not 1-12 letters, digits, "." or "-" (in a path, such a ticker names no stock: 404 not_found), or an unknown enum value. The problem\'s `errors` array names each parameter and what was wrong with it.',
    fix: 'Correct the parameter and send the request again. Dates outside your history window are not errors: they are clamped silently.',
  },
  cursor_invalid: {
    meaning:
      'The `since` of GET /v1/scores/history is a sync cursor (a `next_since` value) that this service cannot continue from: it was altered or truncated, or it is ahead of the data served here (the service was rebuilt from another log).',
    fix: 'Send back `next_since` exactly as received. To start over, make one call with a plain `since` (the latest `restated_at` you hold) and continue with its `next_since`.',
  },
  unauthorized: {
    meaning: 'The X-API-Key header is missing, or the key is unknown.',
    fix: 'Send your key in the X-API-Key header. A free key needs only an email address.',
  },
  key_forbidden: {
    meaning: 'The key is known but not allowed: it was revoked or suspended.',
    fix: 'Use another key of your account, or see your account page.',
  },
  cost_exceeds_max: {
    meaning:
      'The call would cost more than the maximum you sent with it (`X-Max-Credits`, or the MCP argument `max_credits`). Nothing was charged, and a call priced per row stopped reading at your maximum: the problem carries `max_credits` and the `cost` (or, per row, `cost_at_least`).',
    fix: 'Narrow the call (fewer tickers, a shorter date range, a lower limit), or raise the maximum. A dry run (`X-Dry-Run: true`, or `dry_run: true` on MCP) gives the exact price without charging.',
  },
  key_expired: {
    meaning: 'The key is past the expiry it was given (`expires_at`, in the problem). It works nowhere, REST or MCP.',
    fix: 'Use another key of your account, or set a later expiry (or none) on the account page, with `scores keys limits`, or with `PATCH /v1/keys/{key_id}` from an unrestricted key.',
  },
  key_scope_forbidden: {
    meaning:
      'The key may not make this call: it is read-only (`scope` `read_only`: GET calls only, no webhook or key changes) or limited to a list of operations (`operations`) that does not include this one (`operation`). Changing keys (`PATCH /v1/keys/{key_id}`) needs a key without any limit or restriction. Refused before anything was read or charged.',
    fix: 'Use a key of the account that may make the call, or change this key’s restrictions on the account page.',
  },
  coverage: {
    meaning: "The ticker is outside your key's universe. Free keys cover `top100`, the 100 largest stocks; every other plan and the Pro membership cover `all`.",
    fix: 'GET /v1/coverage lists the tickers your key sees. Upgrade, or add the Pro membership, for the full universe.',
  },
  tier: {
    meaning: "The endpoint needs a higher plan tier than your key's.",
    fix: 'Upgrade your plan; the endpoints that need more than the free tier are listed below.',
  },
  not_found: {
    meaning: 'Nothing has that name: an unknown ticker, theme slug or webhook id, or a path that is not part of the API. Paths are case-sensitive and have no trailing slash: /V1/USAGE and /v1/usage/ are 404s whose detail names /v1/usage.',
    fix: 'Check the spelling (the detail names the documented path when only its case or a trailing slash differs); GET /v1/coverage lists the tickers and GET /v1/themes the theme slugs.',
  },
  limit_exceeded: {
    meaning: 'A numeric parameter is above its maximum (a `limit` or `days`), or the account holds the most it may of something already (10 webhooks, 10 active API keys). Each maximum is given in the parameter\'s description in the API reference.',
    fix: 'Ask for at most the maximum, and page through the data if you need more; delete a webhook or revoke a key to make room for another.',
  },
  credits_exhausted: {
    meaning:
      'The call would cost more credits than are left of your monthly allowance and prepaid credits, and overage is off. Nothing was returned and nothing was charged. X-Credits-Remaining shows what is left.',
    fix: 'The problem’s detail lists what your plan allows: buy a credit pack (any plan), switch overage on (hobbyist, builder, quant), upgrade, start the Pro membership (free), or wait for the allowance to reset at `resets_at` (GET /v1/usage).',
  },
  key_budget_exhausted: {
    meaning:
      'The call would take this key past its credit limit for the UTC day or month (`window`, `limit`, `spent`, `cost`). The account’s other keys are not affected, and nothing was returned or charged. Retry-After and `resets_at` say when the window starts again.',
    fix: 'Wait until `resets_at`, use another key of the account, or raise the key’s limit on the account page (or `scores keys limits`, or `PATCH /v1/keys/{key_id}` from an unrestricted key). Responses to a key with limits carry X-Key-Budget-Remaining.',
  },
  method_not_allowed: {
    meaning: 'The path exists, but not for this HTTP method (the MCP endpoint takes POST only: it is stateless, with no stream to GET and no session to DELETE).',
    fix: 'Use the method the API reference gives for the path.',
  },
  request_timeout: {
    meaning: 'The request line and headers, or the body, did not arrive in time: the headers within 10 s, a body at 1 KiB/s at least after its first 10 s (the defaults). The connection is closed.',
    fix: 'Send the whole request at once, on a new connection; a client that streams a body must keep it moving.',
  },
  delivery_expired: {
    meaning: 'The webhook delivery asked to be resent was made more than 30 days ago (`made_at` says when): deliveries can be resent for 30 days.',
    fix: 'Resend the deliveries of the last 30 days only. What the message said is still in the API: read it there (the scores, the divergence events of its dates).',
  },
  payload_too_large: {
    meaning: 'The request body is larger than the endpoint accepts (64 KiB for the MCP endpoint).',
    fix: 'Send a smaller body: one JSON-RPC message, or a batch of fewer messages.',
  },
  unsupported_media_type: {
    meaning: 'The request body is in an encoding or character set the endpoint does not read (the MCP endpoint reads UTF-8 JSON, plain or gzip/deflate/br compressed).',
    fix: 'Send UTF-8 JSON with `Content-Type: application/json`, and a `Content-Encoding` of identity, gzip, deflate or br.',
  },
  range_not_satisfiable: {
    meaning: 'A download asked for a byte range that starts at or beyond the end of the file (`Content-Range: bytes */<size>` gives its size).',
    fix: 'Ask for a range inside the file, or resume from the size you already hold only while it is smaller than the file.',
  },
  headers_too_large: {
    meaning: 'The URL or the headers are larger than the server reads (16 KiB together).',
    fix: 'Send fewer or shorter values: at most 50 tickers per history call, one X-API-Key header.',
  },
  rate_limited: {
    meaning:
      'Too many requests in a short time, or too many at once, or, when the problem has `bytes_per_second`, too many bytes of free answers (the track record, meta, coverage, usage, lists). The rate and the bytes are per account: all its keys, REST and MCP, share them; a key may have 64 requests in flight (the default), and a connection refused for either is not read again for a second.',
    fix: 'Slow down and retry later; honour the Retry-After header when the response has one. Keep the daily bodies and send their ETag as If-None-Match: a 304 costs no bytes.',
  },
  conflict: {
    meaning: 'The request conflicts with the stored state or a change made at the same time: a resend to a deactivated webhook, or an `Idempotency-Key` already used for another resend of the webhook.',
    fix: 'Read the current state and retry: enable the webhook before resending to it; give each resend request a key of its own.',
  },
  internal: {
    meaning: 'The service failed to answer. The error was logged with the request id.',
    fix: 'Retry later. When reporting it, quote the X-Request-Id header of the response.',
  },
};

const ERROR_CODES = Object.keys(ERROR_DOCS) as ErrorCode[];

/** `backticks` in the error texts become <code>; everything else stays escaped text. */
function prose(text: string): SafeHtml {
  return html`${text.split(/`([^`]+)`/).map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;
}

const number = (n: number | null, none: string) => (n === null ? none : n.toLocaleString('en-US'));
const tierName = (t: Tier) => LICENCE_TERMS[t].name;
const costOf = (e: RateCardEntry) => (e.credits === 0 ? 'free' : `${e.credits} per ${e.unit}`);
const gated = RATE_KEYS.map((k) => RATE_CARD[k]).filter((e) => e.min_tier !== 'free');

function errorsPage(baseUrl: string, demo: boolean): SafeHtml {
  const example = problemOf('coverage', `${COVERAGE_EXAMPLE} is outside your coverage (top100); upgrade or add Pro for the full universe`, baseUrl, {
    coverage: 'top100',
  });
  const sections = ERROR_CODES.map((code) => {
    const d = ERROR_DOCS[code];
    return html`<section id="${code}">
<h2><code>${code}</code> · ${statusOf(code)} ${titleOf(code)}</h2>
<p>${prose(d.meaning)}</p>
<p><strong>What to do:</strong> ${prose(d.fix)}</p>
${
  code === 'tier'
    ? html`<ul>${gated.map((e) => html`<li>${e.routes.map((r) => `${r.method} ${r.path}`).join(', ')}: ${tierName(e.min_tier)} and higher</li>`)}</ul>`
    : ''
}
</section>`;
  });
  const body = html`${guidesNav('/docs/errors')}
<h1>Errors</h1>
<p>Every error is an <code>application/problem+json</code> document (RFC 9457) with a stable <code>code</code>. Its <code>type</code> is a link to the code's section below. Responses to an authenticated call carry <code>X-Credits-Remaining</code>, errors included, and every response carries <code>X-Request-Id</code>.</p>
<pre><code>${JSON.stringify(example, null, 2)}</code></pre>
<table>
<thead><tr><th scope="col">code</th><th scope="col" class="num">status</th><th scope="col">title</th></tr></thead>
<tbody>${ERROR_CODES.map((c) => html`<tr><td><a href="#${c}"><code>${c}</code></a></td><td class="num">${statusOf(c)}</td><td>${titleOf(c)}</td></tr>`)}</tbody>
</table>
${sections}`;
  return page({ demo, title: `Errors — ${SERVICE_NAME}`, canonical: `${baseUrl}/docs/errors`, body });
}


function intro(baseUrl: string): SafeHtml {
  return html`<section class="intro" id="introduction">
<h1>${SERVICE_NAME} reference</h1>
<p>Daily Main-Street (measured consumer demand) and Wall-Street (analyst sentiment) scores, 0-100, with a composite <code>service_score</code> and the <code>divergence_gap</code> between them, for 500+ US-listed stocks.</p>
<dl>
<dt>Guides</dt>
<dd><nav class="guides-inline" aria-label="Guides">${GUIDE_LINKS.map((l, i) => html`${i > 0 ? ' · ' : ''}<a href="${l.path}">${l.title}</a>`)}</nav>. Each operation below has a <code>curl</code> line to copy (set <code>SCORES_API_KEY</code> to your key).</dd>
<dt>Base URL</dt>
<dd><code>${baseUrl}</code>. Every endpoint is under <code>/v1</code>; every response is JSON.</dd>
<dt>Authentication</dt>
<dd>Send your key in the <code>X-API-Key</code> header: <code>curl -H "X-API-Key: $API_KEY" ${baseUrl}/v1/scores/AAPL</code>. The MCP server at <code>${baseUrl}/mcp/http</code> takes the same header and charges the same credits.</dd>
<dt>Credits</dt>
<dd>Every paid call consumes credits; every response carries <code>X-Credits-Remaining</code>. <code>GET /v1/usage</code> shows your allowance, usage and the live rate card.</dd>
<dt>Errors</dt>
<dd><code>application/problem+json</code> (RFC 9457) with a stable <code>code</code>: ${ERROR_CODES.filter((c) => c !== 'conflict' && c !== 'internal').map(
    (c, i) => html`${i > 0 ? ', ' : ''}<a href="/docs/errors#${c}"><code>${c}</code></a> ${statusOf(c)}`,
  )}. See <a href="/docs/errors">Errors</a>.</dd>
<dt>Citing the data</dt>
<dd>Data responses carry <code>as_of</code> and <code>citation_url</code>, the public page of the stock dated with <code>as_of</code> (for example <code>/stocks/AAPL?as_of=2019-06-13</code>; <code>/docs?as_of=…</code> for a response about many stocks). That page shows the numbers of its date once the free tier's delay makes them public, and until then says that they are subscriber data. What each tier may do with the data: <a href="/license">licence terms</a>.</dd>
<dt>Retired</dt>
<dd><code>/charts/v1/companies/with-social-heat-score</code> is replaced by <code>GET /v1/coverage</code> and redirects there (308).</dd>
</dl>
<h2>Plans</h2>
<table>
<thead><tr><th scope="col">Tier</th><th scope="col" class="num">Credits a month</th><th scope="col" class="num">Data delay</th><th scope="col">Coverage</th><th scope="col" class="num">History</th></tr></thead>
<tbody>${TIERS.map((t) => {
    const p = PLANS[t];
    return html`<tr><td>${tierName(t)}</td><td class="num">${number(p.monthly_allowance, 'unmetered')}</td><td class="num">${p.delay_days === 0 ? 'live' : `${p.delay_days} days`}</td><td>${p.coverage}</td><td class="num">${p.history_days === null ? 'full' : `${number(p.history_days, '')} days`}</td></tr>`;
  })}</tbody>
</table>
<h2>Credit costs</h2>
<table>
<thead><tr><th scope="col">Endpoint</th><th scope="col">Credits</th><th scope="col">Minimum tier</th></tr></thead>
<tbody>${RATE_KEYS.map((k) => {
    const e = RATE_CARD[k];
    const route = e.routes.length === 1 ? `${e.routes[0]!.method} ${e.routes[0]!.path}` : `${e.routes[0]!.path} (all ${e.routes.length} routes)`;
    return html`<tr><td><code>${route}</code></td><td>${costOf(e)}</td><td>${tierName(e.min_tier)}</td></tr>`;
  })}</tbody>
</table>
<p>The machine-readable description is <a href="/openapi.json">/openapi.json</a>; the reference below is rendered from it.</p>
</section>`;
}

function docsPage(baseUrl: string, demo: boolean): SafeHtml {
  return page({
    demo,
    title: `API reference — ${SERVICE_NAME}`,
    canonical: `${baseUrl}/docs`,
    description: `${SERVICE_NAME}: base URL, authentication, errors and every endpoint.`,
    body: intro(baseUrl),
    wide: html`<div id="redoc"><noscript><p>The endpoint reference needs JavaScript; the same content is in <a href="/openapi.json">/openapi.json</a>.</p></noscript></div>`,
    head: raw(`<script src="/docs/assets/redoc.standalone.js" defer></script>
<script src="/docs/assets/docs.js" defer></script>`),
  });
}

/** `/docs` (intro + Redoc on /openapi.json), `/docs/errors`, and the two scripts the reference needs (the guides: guides.page.ts). */
export function registerDocsPages(app: Express, services: Services): void {
  const bundle = redocBundle();
  app.get('/docs', (_req, res) => sendHtml(res, 200, docsPage(services.baseUrl(), services.config.demo), { cacheControl: CACHE_DOCS, csp: DOCS_CSP }));
  app.get('/docs/errors', (_req, res) => sendHtml(res, 200, errorsPage(services.baseUrl(), services.config.demo), { cacheControl: CACHE_DOCS }));
  app.get('/docs/assets/redoc.standalone.js', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.type('text/javascript; charset=utf-8').send(bundle);
  });
  app.get('/docs/assets/docs.js', (_req, res) => {
    res.setHeader('Cache-Control', CACHE_DOCS);
    res.type('text/javascript').send(REDOC_INIT);
  });
}
