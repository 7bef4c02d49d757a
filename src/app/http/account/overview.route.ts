/**
 * The account page (`GET /account`): keys, the month's usage, the ledger, plan, the upcoming
 * invoice, invoices and webhooks. The account and its ledger are read as the commands see them
 * (their streams), the rest from the read models once they hold the account's last ledger write.
 */
import { loadAccount } from '../../../../commands/manage-keys/keys.handler.js';
import { listInvoices } from '../../../../queries/get-invoices/get-invoices.query.js';
import { getUsageDays } from '../../../../queries/get-usage-days/get-usage-days.query.js';
import { getUpcomingInvoice } from '../../../../queries/get-upcoming-invoice/get-upcoming-invoice.query.js';
import { getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { listWebhooks } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { stateAt, usageFigures } from '../../../domain/ledger/ledger.figures.js';
import { CREDIT_PACKS } from '../../../domain/plans.js';
import type { SafeHtml } from '../pages/html.js';
import type { AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { accountBody, chartHead } from './overview.page.js';

/** Ledger entries per page of the account page. */
const LEDGER_PAGE = 25;

export const showAccount = (r: AccountRequest): Promise<void> => renderAccount(r);

/** The account page, with a notice on top (a new key, shown once) when a form answers with it. */
export async function renderAccount({ req, res, who, services, web }: AccountRequest, notice?: SafeHtml): Promise<void> {
  const now = services.clock.now();
  const accountId = who.account_id;
  await services.queries.ledgerCaughtUp(accountId);
  const account = await loadAccount(services.events, accountId);
  const state = stateAt(await services.ledger.state(accountId), now);
  const figures = usageFigures(state, now);
  const cursor = typeof req.query['cursor'] === 'string' ? req.query['cursor'] : null;
  const [days, ledger, webhooks, invoices, upcoming] = await Promise.all([
    getUsageDays(services.reads, accountId, figures.period),
    getUsageLedger(services.reads, services.events, { accountId, limit: LEDGER_PAGE, cursor }),
    listWebhooks(services.reads, accountId),
    listInvoices(services.reads, accountId),
    getUpcomingInvoice(services.reads, services.events, accountId, now),
  ]);
  const body = accountBody({
    account_id: accountId,
    email: account.email,
    now,
    figures,
    scheduled: state.cancellation_effective_at ? { tier: state.scheduled_tier ?? 'free', at: state.cancellation_effective_at } : null,
    keys: [...account.keys.values()],
    days,
    ledger,
    webhooks: webhooks.webhooks,
    invoices,
    upcoming,
    csrf: web.csrfToken(req, res),
    purchaseIds: CREDIT_PACKS.map(() => services.ids.next('', 12)),
    notice,
  });
  sendAccountPage(res, 200, 'Your account', body, chartHead);
}
