/**
 * The billing forms of the account page: a plan change, the Pro membership (started or ended)
 * and credit packs, each confirmed on a page that names its amount or consequence (GET) before
 * the form that acts (POST), and the overage switch. Each runs the same billing and ledger
 * commands as the CLI, and returns to the account page with a notice of what was done.
 */
import { buyPack, downgradePlan, endPro, proQuote, startPro, upgradePlan, upgradeQuote, type BillingDeps } from '../../../../commands/billing/billing.handler.js';
import { AppError, badRequest } from '../../../core/errors.js';
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import { monthlyPriceCents } from '../../../domain/ledger/proration.js';
import { stateAt } from '../../../domain/ledger/ledger.figures.js';
import { CREDIT_PACKS, PLANS, isTier, tierName as title, type Tier } from '../../../domain/plans.js';
import { done, formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { downgradePage, packPage, proEndPage, proPage, upgradePage } from './billing.page.js';

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
  sendAccountPage(r.res, 200, 'Upgrade', upgradePage({ from: state.tier, to: tier, toCents: to!, period, quote, csrf, simulated: r.services.billing.simulated }));
}

/** A downgrade (no amount: from the month's end) or a paid upgrade (the amount the page quoted). */
export async function changePlan(r: AccountRequest): Promise<void> {
  const tier = tierOf(formField(r.req, 'tier'));
  const amount = formField(r.req, 'amount_cents');
  if (amount === '') {
    const { state } = await downgradePlan(billingOf(r), r.who.account_id, tier);
    return done(r, 'plan', `Your plan moves to ${title(tier)} at the end of ${monthName(state.period ?? '')}${state.resets_at ? ` (${state.resets_at})` : ''}. Nothing was charged.`);
  }
  await upgradePlan(billingOf(r), r.who.account_id, tier, Number(amount));
  done(r, 'plan', `Upgraded to ${title(tier)}: ${formatUsd(Number(amount))} paid, and its allowance of ${(PLANS[tier].monthly_allowance ?? 0).toLocaleString('en-US')} credits applies now.`);
}

export async function showPro(r: AccountRequest): Promise<void> {
  const quote = await proQuote(billingOf(r), r.who.account_id);
  sendAccountPage(r.res, 200, 'Pro membership', proPage(quote, r.web.csrfToken(r.req, r.res), r.services.billing.simulated));
}

export async function joinPro(r: AccountRequest): Promise<void> {
  const amount = Number(formField(r.req, 'amount_cents'));
  await startPro(billingOf(r), r.who.account_id, amount);
  done(r, 'plan', `You are a Pro member: ${formatUsd(amount)} paid for the rest of the month.`);
}

export function showProEnd(r: AccountRequest): Promise<void> {
  sendAccountPage(r.res, 200, 'End the Pro membership', proEndPage(r.web.csrfToken(r.req, r.res)));
  return Promise.resolve();
}

export async function leavePro(r: AccountRequest): Promise<void> {
  const { events } = await endPro(billingOf(r), r.who.account_id);
  done(r, 'plan', events.length > 0 ? 'The Pro membership has ended.' : 'The account had no Pro membership: nothing changed.');
}

/** `GET /account/packs?pack=`: the pack's price, and a fresh purchase reference for the form that buys it. */
export function showPack(r: AccountRequest): Promise<void> {
  const id = typeof r.req.query['pack'] === 'string' ? r.req.query['pack'] : '';
  const pack = CREDIT_PACKS.find((p) => p.id === id);
  if (!pack) throw badRequest(`No pack ${id} is on sale`, { pack: id });
  const purchase = r.services.ids.next('', 12);
  sendAccountPage(r.res, 200, 'Buy a credit pack', packPage(pack, purchase, r.web.csrfToken(r.req, r.res), r.services.billing.simulated));
  return Promise.resolve();
}

export async function buyCreditPack(r: AccountRequest): Promise<void> {
  const packId = formField(r.req, 'pack');
  const { events } = await buyPack(billingOf(r), r.who.account_id, packId, formField(r.req, 'purchase'));
  const pack = CREDIT_PACKS.find((p) => p.id === packId)!;
  done(
    r,
    'plan',
    events.length > 0
      ? `Bought ${pack.credits.toLocaleString('en-US')} prepaid credits for ${formatUsd(Math.round(pack.price_usd * 100))}.`
      : 'This purchase was already made: nothing more was charged.',
  );
}

export async function switchOverage(r: AccountRequest): Promise<void> {
  const on = formField(r.req, 'on');
  if (on !== 'on' && on !== 'off') throw new AppError('bad_request', 'on must be on or off');
  await r.services.ledger.switchOverage(r.who.account_id, on === 'on');
  done(r, 'usage', on === 'on' ? 'Overage is on: calls beyond the allowance and prepaid credits are charged per 1,000 credits.' : 'Overage is off: calls stop when the credits run out.');
}
