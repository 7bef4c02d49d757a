/** `GET /account/webhooks/:id`: one of the account's webhooks and its latest deliveries (another account's is 404). */
import { listDeliveries, listWebhooks, webhooksCaughtUp } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { notFound } from '../../../core/errors.js';
import type { AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { webhookPage } from './webhook.page.js';

export async function showWebhook({ req, res, who, services }: AccountRequest): Promise<void> {
  const id = Number(req.params['id']);
  const list = await listWebhooks(services.reads, who.account_id, await webhooksCaughtUp(services.reads, services.events, who.account_id));
  const hook = Number.isSafeInteger(id) ? list.webhooks.find((w) => w.id === id) : undefined;
  if (!hook) throw notFound('No such webhook on this account');
  const { deliveries } = await listDeliveries(services.reads, who.account_id, id);
  sendAccountPage(res, 200, `Webhook ${id}`, webhookPage(hook, deliveries));
}
