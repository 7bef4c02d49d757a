/**
 * The confirmation steps of the account's billing (confirm.page.ts): a plan change, the Pro
 * membership started or ended, a credit pack, each priced before the form that confirms it.
 */
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import type { Proration } from '../../../domain/ledger/proration.js';
import { PLANS, tierName as title, type CreditPack, type Tier } from '../../../domain/plans.js';
import { html, type SafeHtml } from '../pages/html.js';
import { confirmPage, type PaymentStep } from './confirm.page.js';

const count = (n: number) => n.toLocaleString('en-US');

/** A move to a cheaper plan: it applies when the month ends, and nothing is charged. */
export function downgradePage(v: { from: Tier; to: Tier; toCents: number; period: string; resetsAt: string | null; csrf: string }): SafeHtml {
  return confirmPage({
    title: `Move to ${title(v.to)}`,
    about: html`move from ${title(v.from)} to ${title(v.to)} (${formatUsd(v.toCents)} a month) at the end of ${monthName(v.period)}, for $0.00 now`,
    details: html`<p>Your plan stays ${title(v.from)} until the end of ${monthName(v.period)}; from ${v.resetsAt} it is ${title(v.to)}, with ${count(PLANS[v.to].monthly_allowance ?? 0)} credits a month. A move to a cheaper plan is not prorated: nothing is charged now.</p>`,
    action: '/account/plan',
    fields: { tier: v.to },
    csrf: v.csrf,
    confirm: `Confirm: move to ${title(v.to)} at the end of the month`,
    cancel: '/account#plan',
  });
}

/** An upgrade: charged now for the days left in the month, the new allowance at once. */
export function upgradePage(v: { from: Tier; to: Tier; toCents: number; period: string; quote: Proration; csrf: string; payment: PaymentStep }): SafeHtml {
  const { quote, to } = v;
  return confirmPage({
    title: `Upgrade to ${title(to)}`,
    about: html`pay <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong> now to upgrade from ${title(v.from)} to ${title(to)}`,
    details: html`<p>${title(to)} costs ${formatUsd(v.toCents)} a month, ${formatUsd(quote.monthly_difference_cents)} more than ${title(v.from)}. The amount is that difference for the <strong>${quote.days}</strong> of ${quote.days_in_month} days left in ${monthName(v.period)} (today included).</p>
<p>The new plan and its allowance (${count(PLANS[to].monthly_allowance ?? 0)} credits) apply at once.</p>`,
    action: '/account/plan',
    fields: { tier: to, amount_cents: String(quote.amount_cents) },
    csrf: v.csrf,
    confirm: `Confirm: pay ${formatUsd(quote.amount_cents)} and upgrade`,
    cancel: '/account#plan',
    payment: v.payment,
  });
}

/** The Pro membership: its price, prorated for the days left this month. */
export function proPage(quote: Proration, csrf: string, payment: PaymentStep): SafeHtml {
  return confirmPage({
    title: 'Pro membership',
    about: html`pay <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong> now to become a Pro member`,
    details: html`<p>${formatUsd(quote.monthly_difference_cents)} a month; charged now for the ${quote.days} of ${quote.days_in_month} days left this month. Every key of this account gets live data, the full universe, a year of history and 5,000 credits a month at once.</p>`,
    action: '/account/pro',
    fields: { amount_cents: String(quote.amount_cents) },
    csrf,
    confirm: `Confirm: pay ${formatUsd(quote.amount_cents)} and become a member`,
    cancel: '/account#plan',
    payment,
  });
}

/** Ending the membership: at once, and what was paid for this month is not given back. */
export function proEndPage(csrf: string): SafeHtml {
  return confirmPage({
    title: 'End the Pro membership',
    about: html`end the Pro membership now, with no refund`,
    details: html`<p>The membership ends at once: from next month the account has its plan's own allowance, delay, coverage and history. The credits it granted this month stay; what was paid for this month is not given back.</p>`,
    action: '/account/pro/end',
    csrf,
    confirm: 'Confirm: end the membership',
    cancel: '/account#plan',
  });
}

/** A credit pack: its price, once (the purchase reference makes a form sent twice one purchase). */
export function packPage(pack: CreditPack, purchase: string, csrf: string, payment: PaymentStep): SafeHtml {
  const price = formatUsd(Math.round(pack.price_usd * 100));
  return confirmPage({
    title: 'Buy a credit pack',
    about: html`pay <strong id="pack-price">${price}</strong> for ${count(pack.credits)} prepaid credits`,
    details: html`<p>Prepaid credits carry over month to month and are drawn after the plan's allowance.</p>`,
    action: '/account/packs',
    fields: { pack: pack.id, purchase },
    csrf,
    confirm: `Confirm: pay ${price}`,
    cancel: '/account#plan',
    payment,
  });
}
