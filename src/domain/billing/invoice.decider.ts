/**
 * An account's invoices, decided on `invoices-<account_id>`: one invoice per closed month,
 * numbered in the account's sequence. The month's bill, the payment of what was due and the
 * signed head are made before the command (commands/billing/invoice.handler.ts); issuing a month
 * already issued adds nothing.
 */
import type { Decider } from '../../core/decider.js';
import type { InvoiceIssued } from './billing.events.js';
import type { Invoice } from './invoice.js';

export interface InvoicesState {
  issued: Map<string, Invoice>;
}

/** The invoice as billed, without the number its issue gives it. */
export interface IssueInvoice {
  type: 'IssueInvoice';
  invoice: Omit<Invoice, 'number'>;
  due_cents: number;
  payment_ref: string | null;
}

/** `acct_1a2b3c4d…` → `1A2B3C4D`: the readable part of an invoice number. */
const numberPrefix = (accountId: string) => accountId.replace(/^acct_/, '').replace(/[^A-Za-z0-9]/g, '').slice(0, 8).toUpperCase() || 'ACCOUNT';

export const invoiceDecider: Decider<InvoicesState, IssueInvoice, InvoiceIssued> = {
  initialState: () => ({ issued: new Map() }),
  evolve: (s, e) => (e.type === 'InvoiceIssued' ? { issued: new Map(s.issued).set(e.data.invoice.period, e.data.invoice) } : s),
  decide(s, { invoice, due_cents, payment_ref }) {
    if (s.issued.has(invoice.period)) return [];
    const number = `${numberPrefix(invoice.account_id)}-${String(s.issued.size + 1).padStart(4, '0')}`;
    return [{ type: 'InvoiceIssued', data: { invoice: { number, ...invoice }, due_cents, payment_ref, at: invoice.issued_at } }];
  },
};
