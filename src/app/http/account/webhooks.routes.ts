/**
 * The webhook routes of the account (`/account/webhooks…`), in the order express matches them. A
 * GET of an action's path is its confirmation step; only the POST acts. A refused action answers
 * the page it came from (the webhook's, else the list) with the refusal's status and an error
 * notice naming its code.
 */
import type { AppError } from '../../../core/errors.js';
import { noticeHtml } from './account-notice.js';
import type { AccountHandler, AccountRequest } from './account-route.js';
import { accountErrorPage } from './account-web.js';
import {
  confirmDeleteWebhook,
  confirmEnable,
  confirmResend,
  confirmResendFailed,
  confirmRotateSecret,
  confirmTest,
  deleteOwnWebhook,
  enableOwnWebhook,
  resendOwnDelivery,
  resendOwnFailed,
  rotateOwnWebhookSecret,
  showWebhook,
  testOwnWebhook,
} from './webhook.route.js';
import { confirmRegister, findOwnWebhook, registerOwnWebhook, sendWebhookPage, sendWebhooksPage, showWebhooks } from './webhooks.route.js';

export const WEBHOOK_ROUTES: ReadonlyArray<readonly ['get' | 'post', string, AccountHandler]> = [
  ['get', '/account/webhooks', showWebhooks],
  ['get', '/account/webhooks/new', confirmRegister],
  ['post', '/account/webhooks', registerOwnWebhook],
  ['get', '/account/webhooks/:id', showWebhook],
  ['get', '/account/webhooks/:id/test', confirmTest],
  ['post', '/account/webhooks/:id/test', testOwnWebhook],
  ['get', '/account/webhooks/:id/enable', confirmEnable],
  ['post', '/account/webhooks/:id/enable', enableOwnWebhook],
  ['get', '/account/webhooks/:id/delete', confirmDeleteWebhook],
  ['post', '/account/webhooks/:id/delete', deleteOwnWebhook],
  ['get', '/account/webhooks/:id/rotate-secret', confirmRotateSecret],
  ['post', '/account/webhooks/:id/rotate-secret', rotateOwnWebhookSecret],
  ['get', '/account/webhooks/:id/deliveries/:message/resend', confirmResend],
  ['post', '/account/webhooks/:id/deliveries/:message/resend', resendOwnDelivery],
  ['get', '/account/webhooks/:id/resend-failed', confirmResendFailed],
  ['post', '/account/webhooks/:id/resend-failed', resendOwnFailed],
];

export async function refusedWebhookAction(r: AccountRequest, err: AppError): Promise<void> {
  const answer = { notice: noticeHtml({ kind: 'error', text: err.message }, err.code), status: err.status };
  if (r.req.params['id'] === undefined) return sendWebhooksPage(r, answer);
  const hook = await findOwnWebhook(r);
  if (!hook) return accountErrorPage(err, r.res);
  await sendWebhookPage(r, hook, answer);
}
