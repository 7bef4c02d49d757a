/** A webhook of the account on its own page: where it sends, and its latest deliveries (read-only). */
import type { WebhookDeliveryItem, WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';

export function webhookPage(hook: WebhookListItem, deliveries: WebhookDeliveryItem[]): SafeHtml {
  return html`<h1>Webhook ${hook.id}</h1><p>${hook.event_type} → <code>${hook.url}</code>, ${hook.is_active ? 'active' : 'paused'}.</p>
<table aria-label="Latest deliveries"><thead><tr><th>At</th><th>Kind</th><th>Events</th><th>Result</th></tr></thead><tbody>${deliveries.map(
    (d) => html`<tr><td>${instant(d.created_at)}</td><td>${d.kind}</td><td class="num">${d.event_count}</td><td>${d.ok ? `ok (${d.status_code ?? ''})` : `failed: ${d.error ?? d.status_code ?? ''}`}</td></tr>`,
  )}</tbody></table><p><a href="/account#webhooks">Back</a></p>`;
}
