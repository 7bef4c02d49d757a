/**
 * One of the account's webhooks (`/account/webhooks/:id`) and its actions: a test, enabling,
 * deleting, rotating the secret, resending one delivery or every failed one. Each is confirmed on
 * a page naming the webhook and the consequence (GET) before the form that acts (POST), and runs
 * the API's handler (commands/manage-webhooks). A resend's form carries an idempotency key made
 * by its confirmation page: the form sent twice (a double click, a replayed POST) resends once.
 */
import { deleteWebhook, reactivateWebhook, resendDeliveries, rotateWebhookSecret, sendTestDelivery } from '../../../../commands/manage-webhooks/webhooks.handler.js';
import { parseDeliveryId, parseIdempotencyKey, parseSince } from '../../../../commands/manage-webhooks/resend-request.js';
import { listDeliveredMessages } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { AppError } from '../../../core/errors.js';
import { RESEND_WINDOW_MS } from '../../../domain/webhooks/webhook-resend.decider.js';
import { readableInstant } from '../pages/time.js';
import { formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { deletePage, enablePage, resendFailedPage, resendPage, rotatePage, testPage } from './webhook-confirm.page.js';
import { OVERLAP_HOURS } from './webhook.page.js';
import { backTo, ownWebhook, requireWebhooksPlan, sendWebhookPage } from './webhooks.route.js';

const pageOf = (id: number, anchor = '#deliveries-h') => `/account/webhooks/${id}${anchor}`;

export async function showWebhook(r: AccountRequest): Promise<void> {
  await sendWebhookPage(r, await ownWebhook(r));
}

export async function confirmTest(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  sendAccountPage(r.res, 200, 'Send a test', testPage(hook, r.web.csrfToken(r.req, r.res)));
}

export async function testOwnWebhook(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const sent = await sendTestDelivery({ ...r.services, sender: r.services.webhookSender }, r.who.account_id, hook.id);
  const how = sent.ok ? `delivered: your endpoint answered ${sent.status_code}` : `not delivered: ${sent.error ?? `your endpoint answered ${sent.status_code}`}`;
  backTo(r, pageOf(hook.id), `Test sent to ${hook.url}, ${how}.`);
}

export async function confirmEnable(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  sendAccountPage(r.res, 200, 'Enable a webhook', enablePage(hook, r.web.csrfToken(r.req, r.res)));
}

export async function enableOwnWebhook(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const { reactivated } = await reactivateWebhook(r.services, r.who.account_id, hook.id);
  backTo(r, pageOf(hook.id, ''), reactivated ? `Webhook ${hook.id} is active again: the next events are sent to it.` : `Webhook ${hook.id} was active already: nothing changed.`);
}

/** Deleting needs no plan: a webhook kept from a higher plan can always be removed. */
export async function confirmDeleteWebhook(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  sendAccountPage(r.res, 200, 'Delete a webhook', deletePage(hook, r.web.csrfToken(r.req, r.res)));
}

export async function deleteOwnWebhook(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await deleteWebhook(r.services, r.who.account_id, hook.id);
  backTo(r, '/account/webhooks', `Webhook ${hook.id} is deleted: nothing more is sent to ${hook.url}.`);
}

function overlapOf(value: unknown): number {
  const hours = Number(typeof value === 'string' && value !== '' ? value : 'NaN');
  if (!OVERLAP_HOURS.includes(hours)) throw new AppError('bad_request', 'Choose an overlap offered on the page');
  return hours;
}

export async function confirmRotateSecret(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const hours = overlapOf(r.req.query['overlap_hours']);
  const until = new Date(r.services.transportClock.now().getTime() + hours * 3_600_000).toISOString();
  sendAccountPage(r.res, 200, 'Rotate the signing secret', rotatePage(hook, hours, until, r.web.csrfToken(r.req, r.res)));
}

export async function rotateOwnWebhookSecret(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const hours = overlapOf(formField(r.req, 'overlap_hours'));
  const rotated = await rotateWebhookSecret(r.services, r.who.account_id, hook.id, hours);
  const lead = hours === 0 ? 'The secret is rotated: the old one signs no more.' : `The secret is rotated: the old one signs beside it until ${readableInstant(rotated.previous_secret_expires_at)}.`;
  r.web.showSecretOnce(r.res, { webhook_id: hook.id, secret: rotated.secret, lead });
  r.res.redirect(303, pageOf(hook.id, '#new-secret-note'));
}

/** The request key a resend form carries (made by its confirmation page). */
function requestOf(r: AccountRequest): string {
  const key = parseIdempotencyKey(formField(r.req, 'request') || undefined);
  if (!key) throw new AppError('bad_request', 'This form has no resend reference: open the resend page again');
  return key;
}

export async function confirmResend(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const messageId = parseDeliveryId(String(r.req.params['message']));
  sendAccountPage(r.res, 200, 'Resend a delivery', resendPage(hook, messageId, r.services.ids.next('rsd_', 12), r.web.csrfToken(r.req, r.res)));
}

export async function resendOwnDelivery(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const messageId = parseDeliveryId(String(r.req.params['message']));
  const o = await resendDeliveries(r.services, r.who.account_id, hook.id, { message_id: messageId }, requestOf(r));
  backTo(r, pageOf(hook.id), o.replayed ? `This resend of ${messageId} was made already: nothing more was sent.` : `Resent: ${messageId} goes again within seconds, under its own id.`);
}

/** A `datetime-local` value (`YYYY-MM-DDTHH:MM`, read as UTC), or an instant the confirmation page carries. */
function sinceOf(value: unknown): string {
  const text = typeof value === 'string' ? value.trim() : '';
  return parseSince(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(text) ? `${text}Z` : text);
}

export async function confirmResendFailed(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const now = r.services.transportClock.now().getTime();
  const since = new Date(Math.max(Date.parse(sinceOf(r.req.query['since'])), now - RESEND_WINDOW_MS)).toISOString();
  const messages = await listDeliveredMessages(r.services.reads, r.who.account_id, hook.id, since, r.services.events);
  const failed = messages.filter((m) => m.attempts[0]?.ok === false).length;
  sendAccountPage(r.res, 200, 'Resend failed deliveries', resendFailedPage(hook, since, failed, r.services.ids.next('rsd_', 12), r.web.csrfToken(r.req, r.res)));
}

export async function resendOwnFailed(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  await requireWebhooksPlan(r);
  const o = await resendDeliveries(r.services, r.who.account_id, hook.id, { since: sinceOf(formField(r.req, 'since')) }, requestOf(r));
  const n = o.message_ids.length;
  const text = o.replayed ? 'This resend was made already: nothing more was sent.' : n === 0 ? 'No failed delivery since then: nothing to resend.' : `Resent ${n} failed deliver${n === 1 ? 'y' : 'ies'}: each goes again within seconds, under its own id.`;
  backTo(r, pageOf(hook.id), text);
}
