/**
 * The account page (`GET /account`): keys, the month's usage, the ledger, plan, the upcoming
 * invoice, invoices and webhooks. The account and its ledger are read as the commands see them
 * (their streams), the rest from the read models once they hold the account's last ledger and
 * webhook writes.
 */
import { loadAccount } from '../../../../commands/manage-keys/keys.handler.js';
import { listDunning, listInvoices } from '../../../../queries/get-invoices/get-invoices.query.js';
import { keysLastUsed } from '../../../../queries/get-key-usage/get-key-usage.query.js';
import { getUsageDays } from '../../../../queries/get-usage-days/get-usage-days.query.js';
import { getUpcomingInvoice } from '../../../../queries/get-upcoming-invoice/get-upcoming-invoice.query.js';
import { getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { listWebhooks, webhooksCaughtUp } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { stateAt, usageFigures } from '../../../domain/ledger/ledger.figures.js';
import { spentAt } from '../../../domain/ledger/key-spend.js';
import type { AppError } from '../../../core/errors.js';
import type { SafeHtml } from '../pages/html.js';
import type { AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { noticeHtml } from './account-notice.js';
import { accountBody, chartHead, newKeyNotice } from './overview.page.js';

/** Ledger entries per page of the account page. */
const LEDGER_PAGE = 25;

export const showAccount = (r: AccountRequest): Promise<void> => renderAccount(r);

/**
 * A refused action: the account page, answered with the refusal's status and an error notice
 * naming its code; the form's token stays valid, so the page it was sent from can send again.
 */
export const refusedAction = (r: AccountRequest, err: AppError): Promise<void> =>
  renderAccount(r, { status: err.status, notice: noticeHtml({ kind: 'error', text: err.message }, err.code) });

/**
 * The account page, with a notice on top: the one a form answers with (a refusal), else a new key
 * the last action left for it (shown once), else the notice it left (account-notice.ts).
 */
export async function renderAccount({ req, res, who, services, web }: AccountRequest, answer: { notice?: SafeHtml; /** A refusal's status. */ status?: number } = {}): Promise<void> {
  const now = services.clock.now();
  const accountId = who.account_id;
  await Promise.all([services.queries.ledgerCaughtUp(accountId), webhooksCaughtUp(services.reads, services.events, accountId)]);
  const account = await loadAccount(services.events, accountId);
  const state = stateAt(await services.ledger.state(accountId), now);
  const figures = usageFigures(state, now);
  const cursor = typeof req.query['cursor'] === 'string' && req.query['cursor'] !== '' ? req.query['cursor'] : null;
  const left = web.takeNotice(req, res);
  const shown = web.takeShownKey(req, res);
  const [days, ledger, webhooks, invoices, upcoming, lastUsed, dunning, spend] = await Promise.all([
    getUsageDays(services.reads, accountId, figures.period),
    getUsageLedger(services.reads, services.events, { accountId, limit: LEDGER_PAGE, cursor }),
    listWebhooks(services.reads, accountId),
    listInvoices(services.reads, accountId),
    getUpcomingInvoice(services.reads, services.events, accountId, now),
    keysLastUsed(services.reads, accountId),
    listDunning(services.reads, accountId),
    services.ledger.keySpend(accountId),
  ]);
  const body = accountBody({
    account_id: accountId,
    email: account.email === null ? null : await services.personal.open(accountId, account.email, 'email'),
    now,
    wallNow: services.transportClock.now(),
    figures,
    scheduled: state.cancellation_effective_at ? { tier: state.scheduled_tier ?? 'free', at: state.cancellation_effective_at } : null,
    keys: [...account.keys.values()],
    days,
    ledger,
    webhooks: webhooks.webhooks,
    invoices,
    upcoming,
    lastUsed,
    spend: new Map(Object.keys(spend).map((k) => [k, spentAt(spend, k, now.toISOString())])),
    csrf: web.csrfToken(req, res, answer.status !== undefined),
    simulatedBilling: services.billing.simulated,
    processor: services.billing.processor,
    dunning,
    notice: answer.notice ?? (shown ? newKeyNotice(shown.key, shown.prefix, shown.name, shown.lead) : left ? noticeHtml(left) : undefined),
  });
  sendAccountPage(res, answer.status ?? 200, 'Your account', body, chartHead);
}
