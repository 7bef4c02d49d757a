/**
 * A webhook of the account on its own page: where it sends, its secret shown once after a
 * registration or rotation (with a Copy button), its actions (each a GET to its confirmation
 * step), and the messages of the last 30 days with each attempt and its outcome, each with its
 * Resend button. One card per message on a phone: no button past the edge.
 */
import type { DeliveredMessage, WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import type { ShownSecret } from './account-notice.js';

/** The overlaps the rotate form offers, in hours. */
export const OVERLAP_HOURS = [0, 24, 168];
export const overlapWords = (h: number): string => (h === 0 ? 'no time (stop now)' : h === 24 ? '24 hours' : '7 days');

export interface WebhookView {
  hook: WebhookListItem;
  messages: DeliveredMessage[];
  /** The default of the "failed since" field: a day ago, `YYYY-MM-DDTHH:MM` UTC. */
  dayAgo: string;
  notice?: SafeHtml;
  secret?: ShownSecret | null;
}

/** The new secret, once, with a Copy button (copy.js); without JavaScript it is there to select. */
export function secretNotice(s: ShownSecret): SafeHtml {
  return html`<div class="note" role="status" id="new-secret-note"><p><strong>Done.</strong> ${s.lead} <strong>The signing secret</strong> (shown once; copy it now):</p>
<p><code id="new-secret">${s.secret}</code> <button type="button" class="copy" data-copy="new-secret" hidden>Copy</button></p>
<p class="muted">Your receiver checks each delivery's <code>webhook-signature</code> (or <code>X-Service-Signature</code>) with it: see <a href="/docs/webhooks#signing">Signing</a>.</p></div>`;
}

const outcome = (a: DeliveredMessage['attempts'][number]) => (a.ok ? html`delivered (${a.status_code ?? ''})` : html`failed: ${a.error ?? a.status_code ?? 'no answer'}`);

function attemptsList(m: DeliveredMessage): SafeHtml {
  return html`<ol class="attempts">${m.attempts.map((a) => html`<li value="${a.attempt}">${instant(a.created_at)}: ${outcome(a)}</li>`)}</ol>`;
}

function state(m: DeliveredMessage): SafeHtml {
  if (m.next_attempt_at !== null) return html`owed: next attempt ${instant(m.next_attempt_at)}`;
  return m.attempts[0]?.ok ? html`<strong class="ok">delivered</strong>` : html`<strong class="failed">failed</strong>`;
}

function messageRow(hookId: number, m: DeliveredMessage): SafeHtml {
  return html`<tr data-message="${m.message_id}"><td data-label="Message"><code>${m.message_id}</code><br><span class="small muted">${m.kind}, ${m.event_count} event${m.event_count === 1 ? '' : 's'}</span></td>
<td data-label="Attempts">${attemptsList(m)}</td><td data-label="Now">${state(m)}</td>
<td class="hook-actions"><form method="get" action="/account/webhooks/${hookId}/deliveries/${m.message_id}/resend" class="inline"><button type="submit" class="secondary">Resend…<span class="visually-hidden"> ${m.message_id}</span></button></form></td></tr>`;
}

function actions(v: WebhookView): SafeHtml {
  const id = v.hook.id;
  return html`<h2 id="actions-h">Actions</h2><ul class="hook-forms" aria-labelledby="actions-h">
<li><form method="get" action="/account/webhooks/${id}/test"><button type="submit">Send a test…</button></form></li>
${v.hook.is_active ? '' : html`<li><form method="get" action="/account/webhooks/${id}/enable"><button type="submit">Enable…</button></form></li>`}
<li><form method="get" action="/account/webhooks/${id}/resend-failed"><label for="failed-since">Resend every failed delivery made since (UTC)</label><input id="failed-since" name="since" type="datetime-local" value="${v.dayAgo}" required> <button type="submit">Resend failed…</button></form></li>
<li><form method="get" action="/account/webhooks/${id}/rotate-secret"><label for="overlap">The old secret keeps signing for</label><select id="overlap" name="overlap_hours">${OVERLAP_HOURS.map(
    (h) => html`<option value="${h}"${h === 24 ? html` selected` : ''}>${overlapWords(h)}</option>`,
  )}</select> <button type="submit">Rotate the secret…</button></form></li>
<li><form method="get" action="/account/webhooks/${id}/delete"><button type="submit" class="danger">Delete…</button></form></li></ul>`;
}

export function webhookPage(v: WebhookView): SafeHtml {
  const h = v.hook;
  return html`<h1>Webhook ${h.id}</h1>${v.notice ?? ''}${v.secret ? secretNotice(v.secret) : ''}
<dl class="hook"><dt>Sends</dt><dd><code>${h.event_type}</code> events</dd><dt>To</dt><dd><code id="hook-url">${h.url}</code></dd>
<dt>Status</dt><dd id="hook-status">${h.is_active ? 'active' : 'deactivated: nothing is sent until it is enabled'}${h.consecutive_failures > 0 ? `; ${h.consecutive_failures} attempt${h.consecutive_failures === 1 ? '' : 's'} failed in a row` : ''}</dd></dl>
${actions(v)}
<h2 id="deliveries-h">Deliveries</h2>
<p class="muted">The messages sent in the last 30 days, latest first, each with its attempts (numbered per message). A message resent goes again under its own id, which your receiver can deduplicate on, signed at the sending time.</p>
${
  v.messages.length === 0
    ? html`<p class="muted" id="no-deliveries">None in the last 30 days: send a test.</p>`
    : html`<table aria-label="Deliveries" class="cards" id="deliveries"><thead><tr><th>Message</th><th>Attempts</th><th>Now</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${v.messages.map((m) => messageRow(h.id, m))}</tbody></table>`
}
<p><a href="/account/webhooks">All webhooks</a></p>`;
}
