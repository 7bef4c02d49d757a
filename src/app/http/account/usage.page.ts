/**
 * The money sections of the account page: the month's usage (a chart with dated axes, the
 * figures, a table per day), the ledger of charges in plain words, and the upcoming invoice.
 * Every date and instant is readable, with its exact UTC value in a `<time>` element.
 */
import { USAGE_ALERT_THRESHOLDS, PLANS, overageAllowed, tierName as title } from '../../../domain/plans.js';
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import type { LedgerEventType } from '../../../domain/ledger/ledger.events.js';
import type { UsageFigures } from '../../../domain/ledger/ledger.figures.js';
import type { LedgerPage } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import type { LedgerEntryResponse } from '../../../../queries/shared/ledger-lines.js';
import type { UpcomingInvoice } from '../../../../queries/get-upcoming-invoice/get-upcoming-invoice.query.js';
import type { UsageDayDoc } from '../../../../projections/usage-days/usage-days.projection.js';
import { html, raw, type SafeHtml } from '../pages/html.js';
import { day, instant } from '../pages/time.js';
import { csrfField } from './account-web.js';

const count = (n: number) => n.toLocaleString('en-US');

/** What the usage and money sections show. */
export interface UsageView {
  email: string | null;
  figures: UsageFigures;
  days: UsageDayDoc[];
  ledger: LedgerPage;
  upcoming: UpcomingInvoice;
  csrf: string;
}

/** The chart's figures, carried in the page as JSON (`#usage-data`). */
function chartData(v: UsageView): string {
  const series = { month: v.figures.period, month_name: monthName(v.figures.period), days: v.days.map((d) => d.day), credits: v.days.map((d) => d.credits), calls: v.days.map((d) => d.calls) };
  return JSON.stringify(series).replace(/</g, '\\u003c');
}

export function usageSection(v: UsageView): SafeHtml {
  const f = v.figures;
  const total = v.days.reduce((n, d) => n + d.credits, 0);
  return html`<section id="usage" aria-labelledby="usage-h"><h2 id="usage-h">Usage in ${monthName(f.period)}</h2>
<dl>
<dt>Plan</dt><dd>${title(f.tier)}${f.pro_member ? ' with the Pro membership' : ''}</dd>
<dt>Allowance</dt><dd>${f.monthly_allowance === null ? 'unmetered' : `${count(f.monthly_allowance)} credits`}; used <span id="used">${count(f.used_this_month)}</span>${f.credits_remaining === null ? '' : `, ${count(f.credits_remaining)} left`}; resets <span id="resets">${instant(f.resets_at)}</span></dd>
<dt>Prepaid credits</dt><dd>${count(f.prepaid_credits)}</dd>
<dt>Overage</dt><dd>${f.allow_overage ? `on: ${count(f.overage_credits)} credits, ${formatUsd(Math.round(f.overage_cost_usd * 100))} so far` : 'off (hard stop)'}</dd>
</dl>
<figure class="usage"><div id="usage-chart" class="chart"></div><figcaption class="muted">Credits charged per day in ${monthName(f.period)} (UTC days): ${count(total)} in all. Point at a day for its figures.</figcaption></figure>
<table aria-label="Usage per day"><thead><tr><th>Day</th><th class="num">Calls</th><th class="num">Credits</th></tr></thead><tbody>${v.days.map((d) => html`<tr><td>${day(d.day)}</td><td class="num">${count(d.calls)}</td><td class="num">${count(d.credits)}</td></tr>`)}</tbody></table>
<script type="application/json" id="usage-data">${raw(chartData(v))}</script>
<h3>Usage alerts</h3><p>Emails at ${USAGE_ALERT_THRESHOLDS.map((t) => `${t}%`).join(', ')} of the allowance, once a month each${v.email ? html` to <strong>${v.email}</strong>` : ''}. Raised this month: <span id="alerts">${f.monthly_allowance === null ? 'none (unmetered)' : alertsRaised(f)}</span>.</p>
${
  overageAllowed(f.tier)
    ? html`<form method="post" action="/account/overage">${csrfField(v.csrf)}<input type="hidden" name="on" value="${f.allow_overage ? 'off' : 'on'}"><button type="submit">${f.allow_overage ? 'Switch overage off (hard stop)' : `Switch overage on (${formatUsd(Math.round((PLANS[f.tier].overage_per_1k_usd ?? 0) * 100))} per 1,000 credits beyond the allowance)`}</button></form>`
    : html`<p class="muted">Overage is not available on the ${title(f.tier)} plan: calls stop when the credits run out.</p>`
}</section>`;
}

const alertsRaised = (f: UsageFigures) => {
  const used = f.monthly_allowance ? (f.used_this_month * 100) / f.monthly_allowance : 0;
  const raised = USAGE_ALERT_THRESHOLDS.filter((t) => used >= t);
  return raised.length ? raised.map((t) => `${t}%`).join(', ') : 'none';
};

/** What each kind of ledger entry is called on the page (the event's name is shown as detail). */
export const LEDGER_LABELS: Readonly<Record<LedgerEventType, string>> = {
  LedgerOpened: 'Account opened',
  LedgerPeriodClosed: 'Month closed',
  AllowancePeriodOpened: 'Monthly allowance',
  CreditsDebited: 'API call',
  CreditsDebitedBatch: 'API calls',
  PackPurchased: 'Credit pack',
  OverageSwitched: 'Overage setting',
  PlanChanged: 'Plan change',
  PlanCancellationScheduled: 'Cancellation scheduled',
  PlanDowngradeScheduled: 'Downgrade scheduled',
  ProrationCharged: 'Prorated charge',
  ProMembershipChanged: 'Pro membership',
  UsageAlertRaised: 'Usage alert',
};

/** Credits an entry moved: a charge's cost taken, a pack's credits added. */
const creditsMoved = (e: LedgerEntryResponse) => (e.cost !== null ? `−${count(e.cost)}` : e.credits !== null ? `+${count(e.credits)}` : '');

function ledgerRow(e: LedgerEntryResponse): SafeHtml {
  const label = LEDGER_LABELS[e.kind as LedgerEventType] ?? e.kind;
  return html`<tr><td class="num">${e.seq}</td><td>${e.at ? instant(e.at) : ''}</td><td><strong class="entry">${label}</strong><br><span class="small">${e.detail}</span><br><small class="muted">Event <code>${e.kind}</code>${e.request_id ? html`, request <code>${e.request_id}</code>` : ''}</small></td><td class="num">${creditsMoved(e)}</td><td><code title="${e.hash}">${e.hash.slice(0, 12)}…</code></td></tr>`;
}

export function ledgerSection(v: Pick<UsageView, 'ledger'>): SafeHtml {
  return html`<section id="ledger" aria-labelledby="ledger-h"><h2 id="ledger-h">Ledger of charges</h2>
<p class="muted">The entries of <a href="/docs#tag/Account">GET /v1/usage/ledger</a>, newest first, each hash-chained to the one before.</p>
<table aria-label="Ledger entries" class="ledger"><thead><tr><th class="num">#</th><th>When</th><th>Entry</th><th class="num">Credits</th><th>Hash</th></tr></thead><tbody>${v.ledger.entries.map(ledgerRow)}</tbody></table>
${v.ledger.next_cursor ? html`<p><a href="/account?cursor=${v.ledger.next_cursor}#ledger">Older entries</a></p>` : ''}</section>`;
}

/** The invoice the month gets if it closed now, from the same code as the invoice itself. */
export function upcomingSection(v: Pick<UsageView, 'upcoming'>): SafeHtml {
  const u = v.upcoming;
  return html`<section id="upcoming" aria-labelledby="upcoming-h"><h2 id="upcoming-h">Upcoming invoice: ${monthName(u.period)}</h2>
<p class="muted">What this month's invoice lists so far, as of ${instant(u.as_of)}. It is issued when the month closes, on ${instant(u.closes_at)}; charges until then (overage, upgrades, packs) are added.</p>
<table aria-label="Upcoming invoice" id="upcoming-lines"><thead><tr><th>Line</th><th class="num">Amount</th></tr></thead><tbody>${u.lines.map(
    (l) => html`<tr data-kind="${l.kind}"><td>${l.description}</td><td class="num">${formatUsd(l.amount_cents)}</td></tr>`,
  )}</tbody><tfoot><tr><th scope="row">Total so far</th><td class="num" id="upcoming-total">${formatUsd(u.total_cents)}</td></tr>
<tr><th scope="row">Already paid (prorations and packs, when bought)</th><td class="num" id="upcoming-paid">${formatUsd(u.paid_cents)}</td></tr>
<tr><th scope="row">Due when the month closes</th><td class="num" id="upcoming-due"><strong>${formatUsd(u.due_cents)}</strong></td></tr></tfoot></table></section>`;
}
