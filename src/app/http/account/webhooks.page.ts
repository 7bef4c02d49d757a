/**
 * The account's webhooks in the browser: the list (one card per webhook on a phone) with the form
 * that registers one, and the registration's confirmation step. What each webhook was sent, and
 * what can be done to it, is its own page (webhook.page.ts).
 */
import { MAX_WEBHOOK_URL_LENGTH } from '../../../domain/webhooks/webhook-registry.decider.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../../domain/webhooks/webhook-envelope.js';
import type { WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import { confirmPage } from './confirm.page.js';

/** What each event type sends, in the words of the forms. */
export const EVENT_TYPE_WORDS: Readonly<Record<WebhookEventType, string>> = {
  score_move: 'a stock’s score moves by 10 or more from its previous day',
  divergence_event: 'a new divergence extreme starts',
};

/** `2019-04-10 12:00:00` (the list's timestamps, UTC) as the pages write instants. */
const stamp = (t: string | null) => (t === null ? html`<span class="muted">never</span>` : instant(`${t.replace(' ', 'T')}Z`));

function webhookRow(w: WebhookListItem): SafeHtml {
  return html`<tr><td data-label="Id"><a href="/account/webhooks/${w.id}">Webhook ${w.id}</a></td><td data-label="Events"><code>${w.event_type}</code></td><td data-label="URL" class="hook-url"><code>${w.url}</code></td>
<td data-label="Status">${w.is_active ? 'active' : html`<strong>deactivated</strong>`}${w.consecutive_failures > 0 ? `, ${w.consecutive_failures} failed in a row` : ''}</td><td data-label="Last attempt">${stamp(w.last_fired_at)}</td>
<td class="hook-actions"><a class="button secondary" href="/account/webhooks/${w.id}">Deliveries and actions<span class="visually-hidden"> of webhook ${w.id}</span></a></td></tr>`;
}

export interface WebhooksView {
  webhooks: WebhookListItem[];
  /** The plan includes webhooks (quant and up); else the page says what they need. */
  allowed: boolean;
  tierName: string;
  max: number;
  notice?: SafeHtml;
}

export function webhooksPage(v: WebhooksView): SafeHtml {
  const list =
    v.webhooks.length === 0
      ? html`<p class="muted" id="no-webhooks">No webhooks yet.</p>`
      : html`<table aria-label="Webhooks" class="cards"><thead><tr><th>Id</th><th>Events</th><th>URL</th><th>Status</th><th>Last attempt</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${v.webhooks.map(webhookRow)}</tbody></table>`;
  return html`<h1>Webhooks</h1>${v.notice ?? ''}
<p>A webhook sends an HTTPS <code>POST</code>, signed, to your endpoint when its events happen: see <a href="/docs/webhooks">the webhooks guide</a>. Each can be tested, its deliveries seen and resent for 30 days, its secret rotated. At most ${v.max} per account; the API has the same actions (<code>/v1/webhooks</code>).</p>
${v.allowed ? '' : html`<p class="note" id="tier-note">Webhooks come with the Quant plan and up; this account is on ${v.tierName}. <a href="/account#plan">Change the plan</a> to register, test or resend; a webhook kept from before can still be deleted.</p>`}
${list}
<h2 id="register-h">Register a webhook</h2>
<form method="get" action="/account/webhooks/new" aria-labelledby="register-h">
<p><label for="hook-url">Your endpoint (<code>https://</code>, a public address)</label><input id="hook-url" name="url" type="url" required maxlength="${MAX_WEBHOOK_URL_LENGTH}" placeholder="https://hooks.example.com/scores" autocomplete="off"></p>
<p><label for="hook-events">Send it</label><select id="hook-events" name="event_type">${WEBHOOK_EVENT_TYPES.map((t) => html`<option value="${t}">${t}: ${EVENT_TYPE_WORDS[t]}</option>`)}</select></p>
<p><button type="submit">Register…</button></p></form>
<p><a href="/account#webhooks">Back to your account</a></p>`;
}

/** The registration, confirmed: the secret is shown once on the webhook's page the form leads to. */
export function registerPage(v: { url: string; eventType: WebhookEventType; csrf: string }): SafeHtml {
  return confirmPage({
    title: 'Register a webhook',
    about: html`register a webhook that sends <code>${v.eventType}</code> events (when ${EVENT_TYPE_WORDS[v.eventType]}) to <code>${v.url}</code>`,
    details: html`<p>Its signing secret is shown once, on the next page: copy it into your receiver, which checks each delivery's signature with it. The address is checked now and again at each delivery: it must be public.</p>`,
    action: '/account/webhooks',
    fields: { url: v.url, event_type: v.eventType },
    csrf: v.csrf,
    confirm: 'Confirm: register the webhook',
    cancel: '/account/webhooks',
  });
}
