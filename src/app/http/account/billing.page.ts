/** The confirmation pages of the account's billing: a plan change and the Pro membership, each priced before the form that confirms it. */
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import type { Proration } from '../../../domain/billing/proration.js';
import { PLANS, tierName as title, type Tier } from '../../../domain/plans.js';
import { html, type SafeHtml } from '../pages/html.js';
import { csrfField } from './account-web.js';

/** A move to a cheaper plan: it applies when the month ends, and nothing is charged. */
export function downgradePage(v: { from: Tier; to: Tier; toCents: number; period: string; resetsAt: string | null; csrf: string }): SafeHtml {
  return html`<h1>Move to ${title(v.to)}</h1>
<p>Your plan stays ${title(v.from)} until the end of ${monthName(v.period)}; from ${v.resetsAt} it is ${title(v.to)}, ${formatUsd(v.toCents)} a month. A move to a cheaper plan is not prorated: nothing is charged now.</p>
<form method="post" action="/account/plan">${csrfField(v.csrf)}<input type="hidden" name="tier" value="${v.to}"><button type="submit">Move to ${title(v.to)} at the end of the month</button></form><p><a href="/account">Cancel</a></p>`;
}

/** An upgrade: charged now for the days left in the month, the new allowance at once. */
export function upgradePage(v: { from: Tier; to: Tier; toCents: number; period: string; quote: Proration; csrf: string }): SafeHtml {
  const { quote, to } = v;
  return html`<h1>Upgrade to ${title(to)}</h1>
<p>${title(to)} costs ${formatUsd(v.toCents)} a month, ${formatUsd(quote.monthly_difference_cents)} more than ${title(v.from)}.</p>
<p>Charged now, for the <strong>${quote.days}</strong> of ${quote.days_in_month} days left in ${monthName(v.period)} (today included): <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong>.</p>
<p>The new plan and its allowance (${(PLANS[to].monthly_allowance ?? 0).toLocaleString('en-US')} credits) apply at once.</p>
<form method="post" action="/account/plan">${csrfField(v.csrf)}<input type="hidden" name="tier" value="${to}"><input type="hidden" name="amount_cents" value="${quote.amount_cents}"><button type="submit">Pay ${formatUsd(quote.amount_cents)} and upgrade</button></form><p><a href="/account">Cancel</a></p>`;
}

/** The Pro membership: its price, prorated for the days left this month. */
export function proPage(quote: Proration, csrf: string): SafeHtml {
  return html`<h1>Pro membership</h1>
<p>${formatUsd(quote.monthly_difference_cents)} a month. Charged now for the ${quote.days} of ${quote.days_in_month} days left this month: <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong>. Every key of this account gets live data, the full universe, a year of history and 5,000 credits a month at once.</p>
<form method="post" action="/account/pro">${csrfField(csrf)}<input type="hidden" name="amount_cents" value="${quote.amount_cents}"><button type="submit">Pay ${formatUsd(quote.amount_cents)} and become a member</button></form><p><a href="/account">Cancel</a></p>`;
}
