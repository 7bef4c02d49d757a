/**
 * The confirmation steps of a webhook's actions (confirm.page.ts): a test, enabling, deleting,
 * rotating the secret, resending one delivery or every failed one. Each names the webhook, its
 * endpoint and the consequence; a resend's form carries the request's idempotency key, so the
 * form sent twice resends once.
 */
import type { WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import { confirmPage } from './confirm.page.js';
import { overlapWords } from './webhook.page.js';

const named = (h: WebhookListItem) => html`webhook ${h.id} (<code>${h.url}</code>)`;
const back = (h: WebhookListItem, anchor = '') => `/account/webhooks/${h.id}${anchor}`;

export function testPage(h: WebhookListItem, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Send a test',
    about: html`send one example <code>${h.event_type}</code> event, marked test, to ${named(h)} now`,
    details: html`<p>It is signed like every delivery and sent once (no retry). Its outcome is shown on the next page and listed with the deliveries; a failed test counts in the failure run but never deactivates the webhook.</p>`,
    action: `/account/webhooks/${h.id}/test`,
    csrf,
    confirm: 'Confirm: send the test',
    cancel: back(h),
  });
}

export function enablePage(h: WebhookListItem, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Enable a webhook',
    about: html`make ${named(h)} active again`,
    details: html`<p>Its failure run starts again from zero, and the next events are sent to it. Messages dropped when it was deactivated are not sent by this: resend them from its page once it is active.</p>`,
    action: `/account/webhooks/${h.id}/enable`,
    csrf,
    confirm: 'Confirm: enable the webhook',
    cancel: back(h),
  });
}

export function deletePage(h: WebhookListItem, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Delete a webhook',
    about: html`delete ${named(h)}`,
    details: html`<p>Nothing more is sent to it, messages still owed are dropped, and its deliveries can no longer be resent. Its place under the limit is free again. This cannot be undone: its id is never given again.</p>`,
    action: `/account/webhooks/${h.id}/delete`,
    csrf,
    confirm: `Confirm: delete webhook ${h.id}`,
    cancel: back(h),
    danger: true,
  });
}

export function rotatePage(h: WebhookListItem, hours: number, until: string, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Rotate the signing secret',
    about: html`replace the signing secret of ${named(h)}; the old secret ${hours === 0 ? 'stops signing at once' : html`keeps signing beside the new one until ${instant(until)} (${overlapWords(hours)})`}`,
    details: html`<p>The new secret is shown once, on the next page. Put it in your receiver ${hours === 0 ? 'now: deliveries from now on carry its signature only' : 'before the overlap ends'}.</p>`,
    action: `/account/webhooks/${h.id}/rotate-secret`,
    fields: { overlap_hours: String(hours) },
    csrf,
    confirm: 'Confirm: rotate the secret',
    cancel: back(h),
  });
}

export function resendPage(h: WebhookListItem, messageId: string, request: string, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Resend a delivery',
    about: html`send message <code>${messageId}</code> again to ${named(h)}`,
    details: html`<p>It goes within seconds under its own id (<code>webhook-id: ${messageId}</code>), which your receiver can deduplicate on, with the same body, signed at the sending time; it is retried on failure like a new message. The attempts show on the webhook's page.</p>`,
    action: `/account/webhooks/${h.id}/deliveries/${messageId}/resend`,
    fields: { request },
    csrf,
    confirm: 'Confirm: resend it',
    cancel: back(h, '#deliveries-h'),
  });
}

export function resendFailedPage(h: WebhookListItem, since: string, failed: number, request: string, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Resend failed deliveries',
    about: html`send again every message made since ${instant(since)} whose last attempt failed (<strong id="failed-count">${failed}</strong> listed on its page now) to ${named(h)}`,
    details: html`<p>Each goes within seconds under its own id, with the same body, signed at the sending time. Messages older than 30 days are not resent.</p>`,
    action: `/account/webhooks/${h.id}/resend-failed`,
    fields: { since, request },
    csrf,
    confirm: 'Confirm: resend the failed deliveries',
    cancel: back(h, '#deliveries-h'),
  });
}
