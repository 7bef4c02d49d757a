/**
 * `GET /account/webhooks/:id`: one of the account's webhooks and its latest deliveries (another
 * account's is 404); `POST …/rotate-secret`: a new signing secret, shown once on the page that answers.
 */
import { rotateWebhookSecret } from '../../../../commands/manage-webhooks/webhooks.handler.js';
import { listDeliveries, listWebhooks, webhooksCaughtUp, type WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { AppError, notFound } from '../../../core/errors.js';
import type { SafeHtml } from '../pages/html.js';
import { formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { newSecretNotice, OVERLAP_HOURS, webhookPage } from './webhook.page.js';

async function ownWebhook({ req, who, services }: AccountRequest): Promise<WebhookListItem> {
  const id = Number(req.params['id']);
  const list = await listWebhooks(services.reads, who.account_id, await webhooksCaughtUp(services.reads, services.events, who.account_id));
  const hook = Number.isSafeInteger(id) ? list.webhooks.find((w) => w.id === id) : undefined;
  if (!hook) throw notFound('No such webhook on this account');
  return hook;
}

async function sendWebhookPage(r: AccountRequest, hook: WebhookListItem, notice?: SafeHtml): Promise<void> {
  const { deliveries } = await listDeliveries(r.services.reads, r.who.account_id, hook.id);
  sendAccountPage(r.res, 200, `Webhook ${hook.id}`, webhookPage(hook, deliveries, r.web.csrfToken(r.req, r.res), notice));
}

export async function showWebhook(r: AccountRequest): Promise<void> {
  await sendWebhookPage(r, await ownWebhook(r));
}

export async function rotateOwnWebhookSecret(r: AccountRequest): Promise<void> {
  const hook = await ownWebhook(r);
  const hours = Number(formField(r.req, 'overlap_hours') || 'NaN');
  if (!OVERLAP_HOURS.includes(hours)) throw new AppError('bad_request', 'Choose an overlap offered on the page');
  const rotated = await rotateWebhookSecret(r.services, r.who.account_id, hook.id, hours);
  await sendWebhookPage(r, hook, newSecretNotice(rotated.secret, rotated.previous_secret_expires_at, hours));
}
