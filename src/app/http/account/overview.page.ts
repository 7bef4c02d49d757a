/**
 * The account page's HTML: keys, usage this month (a daily chart and the figures), the ledger of
 * charges, alerts, webhooks, plan and membership, packs, overage, the upcoming invoice, invoices.
 * Server-rendered: every action is a plain form; only the chart needs JavaScript (uPlot, served
 * by the service). The usage, ledger and upcoming-invoice sections are in usage.page.ts.
 */
import { CREDIT_PACKS, TIERS, proAddsTo, selfServe, tierName as title, type Tier } from '../../../domain/plans.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT, MAX_KEY_NAME_LENGTH, defaultKeyName } from '../../../domain/accounts/api-keys.js';
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import { DUNNING_GRACE_DAYS } from '../../../domain/billing/dunning.js';
import { monthlyPriceCents, PRO_MONTHLY_PRICE_CENTS } from '../../../domain/ledger/proration.js';
import type { KeyState } from '../../../domain/accounts/account.state.js';
import { NO_LIMITS } from '../../../domain/accounts/key-limits.js';
import type { WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import type { InvoiceDoc, InvoicePaymentDoc } from '../../../../projections/invoices/invoices.projection.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import { csrfField } from './account-web.js';
import { ledgerSection, upcomingSection, usageSection, type UsageView } from './usage.page.js';
import { simulatedBillingNotice } from './confirm.page.js';
import { booksSection } from './usage-export.page.js';
import { limitFields, limitsText } from './keys.page.js';

const count = (n: number) => n.toLocaleString('en-US');

/** A new key, shown once: the page that shows it is the only place it is ever written. */
export function newKeyNotice(key: string, prefix: string, name: string, lead?: string): SafeHtml {
  return html`<div class="note" role="status"><p>${lead ? html`<strong>Done.</strong> ${lead} ` : ''}<strong>Your new API key, ${name}</strong> (shown once; it is stored only as a hash: copy it now):</p>
<p><code id="new-key">${key}</code> <button type="button" class="copy" data-copy="new-key" hidden>Copy</button></p><p class="muted">Its prefix <code>${prefix}</code> names it on this page from now on. Send it as the <code>X-API-Key</code> header.</p></div>`;
}

export interface AccountView extends UsageView {
  account_id: string;
  now: Date;
  /** The wall clock, which a rotated key's grace period ends on (`now` may be pinned by SCORES_NOW). */
  wallNow: Date;
  /** A downgrade or cancellation waiting for the month's end. */
  scheduled: { tier: Tier; at: string } | null;
  keys: KeyState[];
  webhooks: WebhookListItem[];
  invoices: InvoiceDoc[];
  /** When each key last made a charged call (key id → instant); a key absent was never used. */
  lastUsed: ReadonlyMap<string, string>;
  /** What each key spent today and this month (UTC), the ledger's own figures; a key absent spent nothing. */
  spend: ReadonlyMap<string, { today: number; month: number }>;
  csrf: string;
  /** No money moves (the embedded billing adapter): the plan section says so. */
  simulatedBilling: boolean;
  /** The card processor that takes the payments ("Stripe"): the plan section links its portal. Null: none. */
  processor: string | null;
  /** Months whose invoice the processor could not collect, their grace running. */
  dunning: InvoicePaymentDoc[];
  notice?: SafeHtml;
}


function keysSection(v: AccountView): SafeHtml {
  const now = v.wallNow.toISOString();
  const inGrace = (k: KeyState) => k.status === 'rotated' && k.grace_until !== null && k.grace_until > now;
  // Rotate and Revoke lead to a page that names the key and the consequence; its form acts.
  const revoke = (k: KeyState) => html`<form method="get" action="/account/keys/${k.key_id}/revoke" class="inline"><button type="submit">Revoke</button></form>`;
  const used = (k: KeyState) => {
    const at = v.lastUsed.get(k.key_id);
    return at ? instant(at) : html`<span class="muted">never</span>`;
  };
  const limits = (k: KeyState) => html`<form method="get" action="/account/keys/${k.key_id}/limits" class="inline"><button type="submit">Limits</button></form>`;
  const rows = v.keys.map(
    (k) => html`<tr role="row"><td role="cell" data-label="Prefix"><code>${k.prefix}…</code></td><td role="cell" data-label="Id">${k.key_id}</td><td role="cell" data-label="Name" class="key-name">${k.name}</td><td role="cell" data-label="Status">${k.status}${k.status === 'rotated' && k.grace_until ? html` (${inGrace(k) ? 'works' : 'worked'} until ${k.grace_until})` : ''}</td><td role="cell" data-label="Last used" class="key-used">${used(k)}</td>
<td role="cell" data-label="Limits" class="key-limits">${limitsText(k.limits)}</td><td role="cell" data-label="Spent today" class="num key-today">${count(v.spend.get(k.key_id)?.today ?? 0)}</td><td role="cell" data-label="Spent this month" class="num key-month">${count(v.spend.get(k.key_id)?.month ?? 0)}</td>
<td role="cell" class="key-actions">${
      k.status === 'active'
        ? html`<form method="get" action="/account/keys/${k.key_id}/rotate" class="inline"><label>grace <select name="grace_hours"><option value="0">none</option><option value="24" selected>24 h</option><option value="168">7 days</option></select></label> <button type="submit">Rotate</button></form>
${limits(k)}${revoke(k)}`
        : inGrace(k)
          ? html`${limits(k)}${revoke(k)}`
          : ''
    }</td></tr>`,
  );
  const active = v.keys.filter((k) => k.status === 'active').length;
  return html`<section id="keys" aria-labelledby="keys-h"><h2 id="keys-h">API keys</h2>
<table aria-label="API keys" class="keys" role="table"><thead role="rowgroup"><tr role="row"><th role="columnheader">Prefix</th><th role="columnheader">Id</th><th role="columnheader">Name</th><th role="columnheader">Status</th><th role="columnheader">Last used</th><th role="columnheader">Limits</th><th role="columnheader" class="num">Spent today</th><th role="columnheader" class="num">Spent this month</th><th role="columnheader"><span class="visually-hidden">Actions</span></th></tr></thead><tbody role="rowgroup">${rows}</tbody></table>
<p class="muted" id="key-count">${active} of ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys${active >= MAX_ACTIVE_KEYS_PER_ACCOUNT ? ': revoke one to create another' : ''}. All the keys of the account share its request rate and credits; a key can be given limits of its own (credits a day or a month, an expiry, read-only, some operations only). Rotating or revoking a key ends the grace of the key it replaced, and the new key keeps its limits. Last used: the last call charged to the key; spent: credits charged to it, UTC day and month.</p>
<form method="post" action="/account/keys">${csrfField(v.csrf)}<label for="key-name">Name of the new key</label> <input id="key-name" name="name" maxlength="${MAX_KEY_NAME_LENGTH}" placeholder="${defaultKeyName(v.keys.length + 1)}" autocomplete="off"> <button type="submit">Create a key</button>
<details><summary>Limits of the new key (optional)</summary>${limitFields(NO_LIMITS, 'new-key-limits')}</details></form></section>`;
}

function webhooksSection(v: AccountView): SafeHtml {
  const manage = html`<p><a class="button secondary" href="/account/webhooks">Manage webhooks</a> <span class="muted">register, test, see and resend deliveries (quant plans and up)</span></p>`;
  if (v.webhooks.length === 0) return html`<section id="webhooks" aria-labelledby="webhooks-h"><h2 id="webhooks-h">Webhooks</h2><p class="muted">None yet.</p>${manage}</section>`;
  return html`<section id="webhooks" aria-labelledby="webhooks-h"><h2 id="webhooks-h">Webhooks</h2>${manage}
<table aria-label="Webhooks"><thead><tr><th>Id</th><th>Event</th><th>URL</th><th>Active</th><th>Last fired</th></tr></thead><tbody>${v.webhooks.map(
    (w) => html`<tr><td><a href="/account/webhooks/${w.id}">${w.id}</a></td><td>${w.event_type}</td><td>${w.url}</td><td>${w.is_active ? 'yes' : `no (${w.consecutive_failures} failures)`}</td><td>${w.last_fired_at ? instant(w.last_fired_at) : '—'}</td></tr>`,
  )}</tbody></table></section>`;
}

/**
 * The Pro membership's line: offered only where it adds something to the plan (proAddsTo), kept
 * with its End button for a member, and said to add nothing when the plan has caught up with it.
 */
function proLine(v: AccountView): SafeHtml {
  const f = v.figures;
  const what = html`Pro membership (${formatUsd(PRO_MONTHLY_PRICE_CENTS)} a month: live data, the full universe, a year of history, 5,000 credits a month on every key)`;
  if (f.pro_member) {
    return html`<p id="pro">${what}: <strong>active</strong>${proAddsTo(f.tier) ? '' : html`; it adds nothing to the ${title(f.tier)} plan`}. <form method="get" action="/account/pro/end" class="inline"><button type="submit" class="secondary">End the membership</button></form></p>`;
  }
  return proAddsTo(f.tier) ? html`<p id="pro">${what}: <a href="/account/pro">become a member (prorated)</a></p>` : html``;
}

function planSection(v: AccountView): SafeHtml {
  const f = v.figures;
  const current = monthlyPriceCents(f.tier);
  const options = TIERS.filter((t) => t !== f.tier && selfServe(t) && current !== null).map((t) => {
    const price = monthlyPriceCents(t)!;
    const upgrade = price > current!;
    return html`<li>${title(t)}, ${formatUsd(price)} a month: <a href="/account/plan?tier=${t}">${upgrade ? 'upgrade now (prorated)' : `move at the end of ${monthName(f.period)}`}</a></li>`;
  });
  return html`<section id="plan" aria-labelledby="plan-h"><h2 id="plan-h">Plan and membership</h2>
${v.simulatedBilling ? simulatedBillingNotice : ''}${v.processor ? portalLink(v.processor) : ''}
<p>Your plan: <strong id="plan-name">${title(f.tier)}</strong>${current === null ? ' (by contract)' : `, ${formatUsd(current)} a month`}.${v.scheduled ? html` It moves to <strong>${title(v.scheduled.tier)}</strong> at ${v.scheduled.at}.` : ''}</p>
${current === null ? html`<p class="muted">Contact us to change an enterprise contract.</p>` : html`<ul>${options}</ul>`}
${proLine(v)}
<h3>Prepaid credit packs</h3><p class="muted">Credits that carry over month to month, drawn after the allowance. Each purchase is confirmed on the next page.</p>
<ul>${CREDIT_PACKS.map((p) => html`<li><form method="get" action="/account/packs" class="inline"><input type="hidden" name="pack" value="${p.id}">${count(p.credits)} credits for ${formatUsd(Math.round(p.price_usd * 100))} <button type="submit">Buy</button></form></li>`)}</ul></section>`;
}

/**
 * The processor's portal (cards, its invoices and receipts, cancellation): a link, as a session
 * there changes nothing here, and a link may lead to another site where a form may not (the CSP).
 */
const portalLink = (processor: string): SafeHtml =>
  html`<p id="billing-portal"><a class="button secondary" href="/account/billing-portal">Manage cards, invoices and cancellation (${processor})</a></p>`;

/**
 * Dunning, on top of the page: which month's invoice could not be collected, until when the card
 * can be fixed, and what happens then (the plan falls back to free at that month's end; what was
 * paid for stays).
 */
function dunningBanner(v: AccountView): SafeHtml {
  if (v.dunning.length === 0) return html``;
  const months = v.dunning.map((d) => html`<li>${monthName(d.period)}: update your card by <strong>${d.grace_until.slice(0, 10)}</strong></li>`);
  return html`<div class="notice error" role="alert" id="dunning"><p><strong>Payment failed.</strong> ${v.processor ?? 'The card processor'} could not collect ${v.dunning.length === 1 ? 'an invoice' : 'invoices'} of this account (${DUNNING_GRACE_DAYS} days to pay each):</p><ul>${months}</ul>
<p>Unpaid by then, your plan falls back to Free at the end of that month. Your prepaid credits and the credits already granted stay yours.${v.processor ? html` Use "Manage cards, invoices and cancellation" below.` : ''}</p></div>`;
}

function invoicesSection(v: AccountView): SafeHtml {
  return html`<section id="invoices" aria-labelledby="invoices-h"><h2 id="invoices-h">Invoices</h2>
${
  v.invoices.length === 0
    ? html`<p class="muted">None yet: each month's invoice is issued when the month closes.</p>`
    : html`<table aria-label="Invoices"><thead><tr><th>Number</th><th>Month</th><th class="num">Total</th><th>Status</th><th></th></tr></thead><tbody>${v.invoices.map(
        (i) => html`<tr><td>${i.number}</td><td>${monthName(i.period)}</td><td class="num">${formatUsd(i.invoice.total_cents)}</td><td>${i.invoice.status}</td><td><a href="/account/invoices/${i.number}.pdf">PDF</a> · <a href="/account/invoices/${i.number}.json">JSON</a></td></tr>`,
      )}</tbody></table>`
}</section>`;
}

export function accountBody(v: AccountView): SafeHtml {
  return html`<h1>Your account</h1>
<p>${v.email ? html`Signed in as <strong id="email">${v.email}</strong>` : 'Signed in'} · account <code>${v.account_id}</code>
<form method="post" action="/account/sign-out" class="inline">${csrfField(v.csrf)}<button type="submit">Sign out</button></form></p>
${v.notice ?? ''}${dunningBanner(v)}
<nav class="muted"><a href="#keys">Keys</a> · <a href="#usage">Usage</a> · <a href="#books">Downloads</a> · <a href="#ledger">Ledger</a> · <a href="#plan">Plan</a> · <a href="#upcoming">Upcoming invoice</a> · <a href="#invoices">Invoices</a> · <a href="#webhooks">Webhooks</a> · <a href="/account/requests">Request log</a></nav>
${keysSection(v)}${usageSection(v)}${booksSection({ period: v.figures.period, invoices: v.invoices })}${ledgerSection(v)}${planSection(v)}${upcomingSection(v)}${invoicesSection(v)}${webhooksSection(v)}${deleteSection}`;
}

const deleteSection = html`<section id="delete" aria-labelledby="delete-h"><h2 id="delete-h">Account deletion</h2>
<p>Your keys stop, your webhooks are deleted and your address is forgotten; your ledger and invoices stay, under your account id only. <a class="button secondary" href="/account/delete">Delete my account…</a></p></section>`;

/** The head of the account page: uPlot and the chart script, both served by the service (no CDN). */
export const chartHead = html`<link rel="stylesheet" href="/account/assets/uPlot.min.css"><script src="/account/assets/uPlot.iife.min.js" defer></script><script src="/account/assets/usage-chart.js" defer></script><script src="/account/assets/copy.js" defer></script><style>form.inline{display:inline-block;margin:0 .25rem}</style>`;
