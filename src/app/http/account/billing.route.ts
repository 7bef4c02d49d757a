/**
 * The billing forms of the account page: a plan change and the Pro membership (each priced on a
 * page before the form that confirms it), credit packs and the overage switch. Each runs the same
 * billing and ledger commands as the CLI.
 */
import { buyPack, downgradePlan, endPro, proQuote, startPro, upgradePlan, upgradeQuote, type BillingDeps } from '../../../../commands/billing/billing.handler.js';
import { AppError } from '../../../core/errors.js';
import { monthlyPriceCents } from '../../../domain/billing/proration.js';
import { stateAt } from '../../../domain/ledger/ledger.figures.js';
import { isTier, type Tier } from '../../../domain/plans.js';
import { backTo, formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { downgradePage, proPage, upgradePage } from './billing.page.js';

const billingOf = ({ services }: AccountRequest): BillingDeps => ({ ledger: services.ledger, billing: services.billing, clock: services.clock });

function tierOf(value: unknown): Tier {
  const tier = typeof value === 'string' ? value : '';
  if (!isTier(tier)) throw new AppError('bad_request', `Unknown plan ${tier}`);
  return tier;
}

/** `GET /account/plan?tier=`: what a change to the tier costs and when it applies; the form confirms it. */
export async function showPlanChange(r: AccountRequest): Promise<void> {
  const tier = tierOf(r.req.query['tier']);
  const state = stateAt(await r.services.ledger.state(r.who.account_id), r.services.clock.now());
  const from = monthlyPriceCents(state.tier);
  const to = monthlyPriceCents(tier);
  const csrf = r.web.csrfToken(r.req, r.res);
  const period = state.period ?? '';
  if (from !== null && to !== null && to < from) {
    return sendAccountPage(r.res, 200, 'Change plan', downgradePage({ from: state.tier, to: tier, toCents: to, period, resetsAt: state.resets_at, csrf }));
  }
  const quote = await upgradeQuote(billingOf(r), r.who.account_id, tier);
  sendAccountPage(r.res, 200, 'Upgrade', upgradePage({ from: state.tier, to: tier, toCents: to!, period, quote, csrf }));
}

/** A downgrade (no amount: from the month's end) or a paid upgrade (the amount the page quoted). */
export async function changePlan(r: AccountRequest): Promise<void> {
  const tier = tierOf(formField(r.req, 'tier'));
  const amount = formField(r.req, 'amount_cents');
  if (amount === '') await downgradePlan(billingOf(r), r.who.account_id, tier);
  else await upgradePlan(billingOf(r), r.who.account_id, tier, Number(amount));
  backTo(r.res, 'plan');
}

export async function showPro(r: AccountRequest): Promise<void> {
  const quote = await proQuote(billingOf(r), r.who.account_id);
  sendAccountPage(r.res, 200, 'Pro membership', proPage(quote, r.web.csrfToken(r.req, r.res)));
}

export async function joinPro(r: AccountRequest): Promise<void> {
  await startPro(billingOf(r), r.who.account_id, Number(formField(r.req, 'amount_cents')));
  backTo(r.res, 'plan');
}

export async function leavePro(r: AccountRequest): Promise<void> {
  await endPro(billingOf(r), r.who.account_id);
  backTo(r.res, 'plan');
}

export async function buyCreditPack(r: AccountRequest): Promise<void> {
  await buyPack(billingOf(r), r.who.account_id, formField(r.req, 'pack'), formField(r.req, 'purchase'));
  backTo(r.res, 'plan');
}

export async function switchOverage(r: AccountRequest): Promise<void> {
  const on = formField(r.req, 'on');
  if (on !== 'on' && on !== 'off') throw new AppError('bad_request', 'on must be on or off');
  await r.services.ledger.switchOverage(r.who.account_id, on === 'on');
  backTo(r.res, 'usage');
}
