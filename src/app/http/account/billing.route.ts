/**
 * The billing forms of the account page: a plan change, the Pro membership (started or ended)
 * and credit packs, each confirmed on a page that names its amount or consequence (GET) before
 * the form that acts (POST), and the overage switch. Each runs the same billing and ledger
 * commands as the CLI, and returns to the account page with a notice of what was done.
 */
import { buyPack, downgradePlan, endPro, proQuote, startPro, upgradePlan, upgradeQuote, type BillingDeps, type Purchased } from '../../../../commands/billing/billing.handler.js';
import { customerOf } from '../../../../commands/billing/customer.handler.js';
import type { LedgerOutcome } from '../../../domain/ledger/ledger.commands.js';
import { AppError, badRequest } from '../../../core/errors.js';
import { HEADER } from '../../../web/response-headers.js';
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import { monthlyPriceCents } from '../../../domain/ledger/proration.js';
import { stateAt } from '../../../domain/ledger/ledger.figures.js';
import { CREDIT_PACKS, PLANS, isTier, tierName as title, type Tier } from '../../../domain/plans.js';
import { done, formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { downgradePage, packPage, proEndPage, proPage, upgradePage } from './billing.page.js';
import type { PaymentStep } from './confirm.page.js';

/** Where a customer sent to the processor's page comes back to (`?checkout=done|cancelled`). */
const CHECKOUT_RETURN = '/account/checkout';

const billingOf = ({ services }: AccountRequest): BillingDeps => ({
  ledger: services.ledger,
  billing: services.billing,
  clock: services.clock,
  events: services.events,
  returnUrl: `${services.baseUrl()}${CHECKOUT_RETURN}`,
});

const paymentStep = ({ services }: AccountRequest): PaymentStep => ({ simulated: services.billing.simulated, processor: services.billing.processor });

/** After a purchase: the processor's page when it takes the payment there, else back to the account with `paidText`. */
function paidOrRedirect(r: AccountRequest, outcome: Purchased, paidText: (o: LedgerOutcome) => string): void {
  if ('redirect' in outcome) return r.res.redirect(303, outcome.redirect);
  done(r, 'plan', paidText(outcome));
}

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
  sendAccountPage(r.res, 200, 'Upgrade', upgradePage({ from: state.tier, to: tier, toCents: to!, period, quote, csrf, payment: paymentStep(r) }));
}

/** A downgrade (no amount: from the month's end) or a paid upgrade (the amount the page quoted). */
export async function changePlan(r: AccountRequest): Promise<void> {
  const tier = tierOf(formField(r.req, 'tier'));
  const amount = formField(r.req, 'amount_cents');
  if (amount === '') {
    const { state } = await downgradePlan(billingOf(r), r.who.account_id, tier);
    return done(r, 'plan', `Your plan moves to ${title(tier)} at the end of ${monthName(state.period ?? '')}${state.resets_at ? ` (${state.resets_at})` : ''}. Nothing was charged.`);
  }
  const outcome = await upgradePlan(billingOf(r), r.who.account_id, tier, Number(amount));
  paidOrRedirect(r, outcome, () => `Upgraded to ${title(tier)}: ${formatUsd(Number(amount))} paid, and its allowance of ${(PLANS[tier].monthly_allowance ?? 0).toLocaleString('en-US')} credits applies now.`);
}

export async function showPro(r: AccountRequest): Promise<void> {
  const quote = await proQuote(billingOf(r), r.who.account_id);
  sendAccountPage(r.res, 200, 'Pro membership', proPage(quote, r.web.csrfToken(r.req, r.res), paymentStep(r)));
}

export async function joinPro(r: AccountRequest): Promise<void> {
  const amount = Number(formField(r.req, 'amount_cents'));
  const outcome = await startPro(billingOf(r), r.who.account_id, amount);
  paidOrRedirect(r, outcome, () => `You are a Pro member: ${formatUsd(amount)} paid for the rest of the month.`);
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
  sendAccountPage(r.res, 200, 'Buy a credit pack', packPage(pack, purchase, r.web.csrfToken(r.req, r.res), paymentStep(r)));
  return Promise.resolve();
}

export async function buyCreditPack(r: AccountRequest): Promise<void> {
  const packId = formField(r.req, 'pack');
  const outcome = await buyPack(billingOf(r), r.who.account_id, packId, formField(r.req, 'purchase'));
  const pack = CREDIT_PACKS.find((p) => p.id === packId)!;
  paidOrRedirect(r, outcome, ({ events }) =>
    events.length > 0
      ? `Bought ${pack.credits.toLocaleString('en-US')} prepaid credits for ${formatUsd(Math.round(pack.price_usd * 100))}.`
      : 'This purchase was already made: nothing more was charged.',
  );
}

/**
 * `GET /account/checkout?checkout=done|cancelled`: back from the processor's page. What was bought
 * is recorded when the processor reports the payment (its webhook), which may come a moment after.
 */
export function checkoutReturned(r: AccountRequest): Promise<void> {
  const processor = r.services.billing.processor ?? 'The processor';
  if (r.req.query['checkout'] === 'done') {
    done(r, 'plan', `${processor} has taken your payment: the purchase shows here as soon as ${processor} confirms it to us (usually within seconds; reload the page).`);
  } else {
    r.web.notify(r.res, { kind: 'error', text: `The payment at ${processor} was cancelled: nothing was charged and nothing changed.` });
    r.res.redirect(303, '/account#plan');
  }
  return Promise.resolve();
}

/** `GET /account/billing-portal`: the processor's portal (cards, invoices, cancellation), for this account's customer. */
export async function openBillingPortal(r: AccountRequest): Promise<void> {
  const { services } = r;
  const customer = await customerOf(billingOf(r), r.who.account_id);
  // A retry of this request (stripe-node's own) is the same session; the next visit asks for a new one.
  const key = `${r.who.account_id}:portal:${String(r.res.getHeader(HEADER.requestId) ?? services.ids.next('', 12))}`;
  const url = await services.billing.portalUrl(customer, `${services.baseUrl()}/account#plan`, key);
  if (!url) throw new AppError('not_found', 'This deployment takes no payments through a card processor: there is no billing portal');
  r.res.redirect(303, url);
}

export async function switchOverage(r: AccountRequest): Promise<void> {
  const on = formField(r.req, 'on');
  if (on !== 'on' && on !== 'off') throw new AppError('bad_request', 'on must be on or off');
  await r.services.ledger.switchOverage(r.who.account_id, on === 'on');
  done(r, 'usage', on === 'on' ? 'Overage is on: calls beyond the allowance and prepaid credits are charged per 1,000 credits.' : 'Overage is off: calls stop when the credits run out.');
}
