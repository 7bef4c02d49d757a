import { notFound } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { invoicePayments, invoices, invoicesProjection, type InvoiceDoc, type InvoicePaymentDoc } from '../../projections/invoices/invoices.projection.js';

/** Invoices the account page lists: two years of closed months. */
export const INVOICES_LISTED = 24;

/** An invoice's number: the account's code and its sequence (`1A2B3C4D-0001`). */
const INVOICE_NUMBER = /^[A-Z0-9]+-\d{4}$/;

/** An account's invoices, newest month first. */
export async function listInvoices(reads: ReadStore, accountId: string): Promise<InvoiceDoc[]> {
  await reads.register(invoicesProjection.collections);
  return (await reads.find(invoices, { account_id: accountId }, { sort: [['period', -1]], limit: INVOICES_LISTED })).items;
}

/** The account's months in dunning: a card processor could not collect their invoice, and their grace runs. */
export async function listDunning(reads: ReadStore, accountId: string): Promise<InvoicePaymentDoc[]> {
  await reads.register(invoicesProjection.collections);
  return (await reads.find(invoicePayments, { account_id: accountId, status: 'failing' }, { sort: [['period', 1]], limit: INVOICES_LISTED })).items;
}

/**
 * One invoice of the account by its number. Another account's invoice answers as one that does
 * not exist (404): the look-up is keyed by the owner, so nothing tells a stranger it is there.
 */
export async function getInvoice(reads: ReadStore, accountId: string, number: string): Promise<InvoiceDoc> {
  await reads.register(invoicesProjection.collections);
  const doc = INVOICE_NUMBER.test(number) ? await reads.get(invoices, `${accountId}|${number}`) : null;
  if (!doc || doc.account_id !== accountId) throw notFound('No such invoice on this account');
  return doc;
}
