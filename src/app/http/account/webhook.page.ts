/** A webhook of the account on its own page: where it sends, its latest deliveries, and the form that rotates its signing secret. */
import type { WebhookDeliveryItem, WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import { csrfField } from './account-web.js';

/** The overlaps the rotate form offers, in hours. */
export const OVERLAP_HOURS = [0, 24, 168];

export function webhookPage(hook: WebhookListItem, deliveries: WebhookDeliveryItem[], csrf: string, notice?: SafeHtml): SafeHtml {
  return html`${notice ?? ''}<h1>Webhook ${hook.id}</h1><p>${hook.event_type} → <code>${hook.url}</code>, ${hook.is_active ? 'active' : 'paused'}.</p>
<table aria-label="Latest deliveries"><thead><tr><th>At</th><th>Kind</th><th>Events</th><th>Result</th></tr></thead><tbody>${deliveries.map(
    (d) => html`<tr><td>${instant(d.created_at)}</td><td>${d.kind}</td><td class="num">${d.event_count}</td><td>${d.ok ? `ok (${d.status_code ?? ''})` : `failed: ${d.error ?? d.status_code ?? ''}`}</td></tr>`,
  )}</tbody></table>
<h2>Signing secret</h2><p>A new secret is shown once, on the page that answers. During the overlap every delivery is signed with both the old and the new secret, so your receiver can switch without missing one.</p>
<form method="post" action="/account/webhooks/${hook.id}/rotate-secret">${csrfField(csrf)}<label>Old secret keeps signing for <select name="overlap_hours">${OVERLAP_HOURS.map(
    (h) => html`<option value="${h}"${h === 24 ? html` selected` : ''}>${h === 0 ? 'no time (stop now)' : h === 24 ? '24 hours' : '7 days'}</option>`,
  )}</select></label> <button type="submit">Rotate the secret</button></form>
<p><a href="/account#webhooks">Back</a></p>`;
}

/** The new secret, once, on the page answering the rotation. */
export function newSecretNotice(secret: string, until: string, hours: number): SafeHtml {
  return html`<div class="note" role="status"><p><strong>Done. The new signing secret</strong> (shown once; copy it now):</p><p><code id="new-secret">${secret}</code></p>
<p class="muted">${hours === 0 ? 'The old secret signs no more.' : html`The old secret signs beside it until <time datetime="${until}">${until}</time>.`}</p></div>`;
}
