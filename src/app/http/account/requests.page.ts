/**
 * The request log on the account pages: the account's calls, newest first, with a filter form
 * (request id, key, status class, operation, UTC day), and one call on a page of its own. Plain
 * GET forms and links: nothing here changes anything, so nothing needs a CSRF token.
 */
import type { KeyState } from '../../../domain/accounts/account.state.js';
import { RATE_KEYS } from '../../../domain/rate-card.js';
import type { RequestLogEntryResponse, RequestLogFilters, RequestLogPageResponse } from '../../../../queries/get-request-log/get-request-log.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';

const STATUS_CLASSES: readonly (readonly [string, string])[] = [
  ['2xx', '2xx answered'],
  ['4xx', '4xx refused'],
  ['5xx', '5xx failed'],
];

/** What a call was: the operation's rate key and, over MCP, its tool. */
const operationOf = (e: RequestLogEntryResponse): SafeHtml =>
  e.tool ? html`<code>${e.tool}</code> <span class="muted">(MCP, ${e.operation})</span>` : e.operation ? html`<code>${e.operation}</code>` : html`<span class="muted">${e.method} ${e.path}</span>`;

const outcomeOf = (e: RequestLogEntryResponse): SafeHtml => html`${e.status}${e.code ? html` <code>${e.code}</code>` : ''}`;

const keyOf = (e: RequestLogEntryResponse): SafeHtml => html`${e.key_name} <code>${e.key_prefix}…</code>`;

const selected = (on: boolean): SafeHtml => (on ? html` selected` : html``);

function filterForm(keys: ReadonlyMap<string, KeyState>, f: RequestLogFilters): SafeHtml {
  const option = (value: string, text: SafeHtml | string, current: string | undefined) => html`<option value="${value}"${selected(value === current)}>${text}</option>`;
  return html`<form method="get" action="/account/requests" class="filters" role="search" aria-label="Filter the calls">
<div><label for="f-request">Request id</label><input id="f-request" name="request_id" type="text" value="${f.request_id ?? ''}" placeholder="req_…" autocomplete="off" spellcheck="false"></div>
<div><label for="f-key">Key</label><select id="f-key" name="key">${option('', 'any key', f.key)}${[...keys.values()].map((k) => option(k.prefix, `${k.name} (${k.prefix}…, ${k.status})`, f.key))}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status">${option('', 'any status', f.status)}${STATUS_CLASSES.map(([v, t]) => option(v, t, f.status))}</select></div>
<div><label for="f-operation">Operation</label><select id="f-operation" name="operation">${option('', 'any operation', f.operation)}${RATE_KEYS.map((k) => option(k, k, f.operation))}</select></div>
<div><label for="f-day">Day (UTC)</label><input id="f-day" name="day" type="date" value="${f.day ?? ''}"></div>
<div class="filter-actions"><button type="submit">Show these calls</button> <a href="/account/requests">Clear the filters</a></div>
</form>`;
}

/** The next page's link: the same filters, the cursor. */
function olderLink(f: RequestLogFilters, cursor: string): SafeHtml {
  const params = new URLSearchParams(Object.entries({ ...f, cursor }).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));
  return html`<p><a href="/account/requests?${params.toString()}">Older calls</a></p>`;
}

export function requestsPage(page: RequestLogPageResponse, keys: ReadonlyMap<string, KeyState>, f: RequestLogFilters): SafeHtml {
  const rows = page.requests.map(
    (e) =>
      html`<tr><td><a href="/account/requests/${e.request_id}"><code>${e.request_id}</code></a></td><td data-label="Status">${outcomeOf(e)}</td><td data-label="When">${instant(e.at)}</td><td data-label="Operation">${operationOf(e)}</td><td data-label="Key">${keyOf(e)}</td><td data-label="Credits" class="num">${e.credits}</td><td data-label="ms" class="num">${e.latency_ms}</td></tr>`,
  );
  return html`<h1>Request log</h1>
<p>Every call of your keys in the last ${page.kept_days} days, REST and MCP, answered and refused alike, newest first: the same as <a href="/docs#tag/Account">GET /v1/requests</a>. A call shows here within a second or so of its answer. Its request id is the <code>X-Request-Id</code> header of its response.</p>
${filterForm(keys, f)}
${
  page.count === 0
    ? html`<p id="no-calls" class="muted">No call matches${f.request_id ? html` the request id <code>${f.request_id}</code>` : ''}.</p>`
    : html`<table aria-label="Calls" class="requests"><thead><tr><th>Request id</th><th>Status</th><th>When</th><th>Operation</th><th>Key</th><th class="num">Credits</th><th class="num">ms</th></tr></thead><tbody>${rows}</tbody></table>`
}
${page.next_cursor ? olderLink(f, page.next_cursor) : ''}
<p><a href="/account">Back to your account</a></p>`;
}

/** One call: everything the log holds of it. */
export function requestPage(e: RequestLogEntryResponse): SafeHtml {
  return html`<h1>Call <code>${e.request_id}</code></h1>
<dl class="request">
<dt>When it ended</dt><dd>${instant(e.at)} (<code>${e.at}</code>)</dd>
<dt>Status</dt><dd id="request-status">${e.status}${e.status === 499 ? ' (the client went away before the answer)' : ''}</dd>
<dt>Problem code</dt><dd id="request-code">${e.code ? html`<code>${e.code}</code> (<a href="/docs/errors#${e.code}">what it means</a>)` : html`<span class="muted">none: answered</span>`}</dd>
<dt>Operation</dt><dd>${operationOf(e)}</dd>
<dt>Route</dt><dd><code>${e.method} ${e.path}</code> over ${e.channel === 'mcp' ? 'MCP' : 'REST'}</dd>
<dt>Key</dt><dd>${keyOf(e)}</dd>
<dt>Credits charged</dt><dd id="request-credits">${e.credits}${e.credits > 0 ? html` <span class="muted">(its ledger entry names the same request id)</span>` : ''}</dd>
<dt>Latency</dt><dd>${e.latency_ms} ms</dd>
</dl>
<p><a href="/account/requests">All calls</a> · <a href="/account">Back to your account</a></p>`;
}
