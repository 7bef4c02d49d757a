/**
 * "Usage for your books" on the account page: a month's daily usage or ledger lines as CSV
 * (usage-export.route.ts), and the invoices' PDFs.
 */
import { monthName } from '../../../domain/billing/invoice.js';
import type { InvoiceDoc } from '../../../../projections/invoices/invoices.projection.js';
import { html, type SafeHtml } from '../pages/html.js';

/** Months offered: this one and the 12 before it. */
const MONTHS_OFFERED = 13;

function monthsUpTo(period: string): string[] {
  const [y, m] = period.split('-').map(Number) as [number, number];
  return Array.from({ length: MONTHS_OFFERED }, (_, i) => new Date(Date.UTC(y, m - 1 - i, 1)).toISOString().slice(0, 7));
}

export function booksSection(v: { period: string; invoices: InvoiceDoc[] }): SafeHtml {
  return html`<section id="books" aria-labelledby="books-h"><h2 id="books-h">Usage for your books</h2>
<p class="muted">A month's figures as CSV: the calls and credits of each day (UTC), or every line of the ledger, with its hash, as <code>GET /v1/usage/ledger?month=</code> gives them.</p>
<form method="get" action="/account/usage/export"><p><label for="books-month">Month</label><select id="books-month" name="month">${monthsUpTo(v.period).map((m) => html`<option value="${m}">${monthName(m)}</option>`)}</select></p>
<p><button type="submit" name="file" value="days">Download daily usage (CSV)</button> <button type="submit" name="file" value="ledger" class="secondary">Download ledger lines (CSV)</button></p></form>
${v.invoices.length === 0 ? html`<p class="muted">Invoices: none yet.</p>` : html`<p>Invoices (PDF): ${v.invoices.map((i, n) => html`${n > 0 ? ', ' : ''}<a href="/account/invoices/${i.number}.pdf">${monthName(i.period)} (${i.number})</a>`)}.</p>`}</section>`;
}
