/**
 * The account page and its actions (`/account…`), for a signed-in session: one handler per page
 * or form, each in the file of its page group. Every action goes through the same commands as the
 * CLI and the API (keys, ledger, billing), so the account page is a second front door to one set
 * of deciders. Another account's key, webhook or invoice is 404.
 */
import type { Express } from 'express';
import type { Services } from '../../container.js';
import { registerAccountAssets } from './account-assets.js';
import { accountErrors, signed, type AccountHandler } from './account-route.js';
import type { AccountWeb } from './account-web.js';
import { buyCreditPack, changePlan, checkoutReturned, joinPro, leavePro, openBillingPortal, showPack, showPlanChange, showPro, showProEnd, switchOverage } from './billing.route.js';
import { confirmDelete, deleteOwnAccount } from './delete.route.js';
import { sendInvoice } from './invoices.route.js';
import { sendUsageCsv } from './usage-export.route.js';
import { confirmLimits, confirmRevoke, confirmRotate, createKey, revokeOwnKey, rotateOwnKey, setOwnKeyLimits } from './keys.route.js';
import { refusedAction, showAccount } from './overview.route.js';
import { refusedWebhookAction, WEBHOOK_ROUTES } from './webhooks.routes.js';
import { showRequest, showRequests } from './requests.route.js';

/**
 * Every signed-in route of the account, in the order express matches them. A GET of an action's
 * path is its confirmation step (it names the amount or the consequence); only the POST acts.
 */
const ACCOUNT_ROUTES: ReadonlyArray<readonly ['get' | 'post', string, AccountHandler]> = [
  ['get', '/account', showAccount],
  ['post', '/account/keys', createKey],
  ['get', '/account/keys/:id/rotate', confirmRotate],
  ['post', '/account/keys/:id/rotate', rotateOwnKey],
  ['get', '/account/keys/:id/revoke', confirmRevoke],
  ['post', '/account/keys/:id/revoke', revokeOwnKey],
  ['get', '/account/keys/:id/limits', confirmLimits],
  ['post', '/account/keys/:id/limits', setOwnKeyLimits],
  ['post', '/account/overage', switchOverage],
  ['get', '/account/plan', showPlanChange],
  ['post', '/account/plan', changePlan],
  ['get', '/account/pro', showPro],
  ['post', '/account/pro', joinPro],
  ['get', '/account/pro/end', showProEnd],
  ['post', '/account/pro/end', leavePro],
  ['get', '/account/packs', showPack],
  ['post', '/account/packs', buyCreditPack],
  ['get', '/account/checkout', checkoutReturned],
  ['get', '/account/billing-portal', openBillingPortal],
  ['get', '/account/invoices/:file', sendInvoice],
  ['get', '/account/usage/export', sendUsageCsv],
  ['get', '/account/requests', showRequests],
  ['get', '/account/requests/:id', showRequest],
  ['get', '/account/delete', confirmDelete],
  ['post', '/account/delete', deleteOwnAccount],
];

export function registerAccountRoutes(app: Express, services: Services, web: AccountWeb): void {
  // A refused action (POST) answers the account page with an error notice; a GET, an error page.
  for (const [method, path, handler] of ACCOUNT_ROUTES) app[method](path, ...web.middleware, signed(services, web, handler, method === 'post' ? refusedAction : undefined));
  for (const [method, path, handler] of WEBHOOK_ROUTES) app[method](path, ...web.middleware, signed(services, web, handler, method === 'post' ? refusedWebhookAction : undefined));
  registerAccountAssets(app);
  app.use('/account', accountErrors);
}
