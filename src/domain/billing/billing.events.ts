/** Billing events. One stream per account: `invoices-<account_id>`, an invoice per closed month. */
import type { Invoice } from './invoice.js';

export const INVOICES_STREAM_PREFIX = 'invoices-';
export const invoicesStream = (accountId: string) => `${INVOICES_STREAM_PREFIX}${accountId}`;

/**
 * A month's invoice, issued once its ledger month closed; immutable (never another event about
 * it). `payment_ref` pays what was still due when it was issued (plan, membership, overage; null
 * when nothing was), the Billing port's reference; prorations and packs were paid when bought.
 */
export interface InvoiceIssued {
  type: 'InvoiceIssued';
  data: { invoice: Invoice; due_cents: number; payment_ref: string | null; at: string };
}

export type BillingEvent = InvoiceIssued;
