/**
 * Invoices read models:
 * - `invoice_months`: each closed ledger month of each account, `pending` until its invoice is
 *   issued (what the invoice reactor works through);
 * - `invoices`: every issued invoice, as the account page lists it and serves it (JSON and PDF);
 * - `invoice_payments`: each month whose payment a card processor reported failed (dunning), until
 *   it is paid or lapses (the account page's banner, the dunning sweep).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { Invoice } from '../../src/domain/billing/invoice.js';
import { INVOICES_STREAM_PREFIX, type InvoiceEvent, type InvoiceIssued } from '../../src/domain/billing/billing.events.js';
import { LEDGER_STREAM_PREFIX, type LedgerPeriodClosed } from '../../src/domain/ledger/ledger.events.js';

export interface InvoiceMonthDoc {
  account_id: string;
  period: string;
  /** Revision of the month's `LedgerPeriodClosed` in the account's ledger stream. */
  closing_revision: number;
  status: 'pending' | 'issued';
  number: string | null;
}

export interface InvoiceDoc {
  account_id: string;
  number: string;
  period: string;
  invoice: Invoice;
  due_cents: number;
  payment_ref: string | null;
}

export interface InvoicePaymentDoc {
  account_id: string;
  period: string;
  status: 'failing' | 'paid' | 'lapsed';
  since: string;
  grace_until: string;
}

export const invoicePayments = defineCollection<InvoicePaymentDoc>({
  name: 'invoice_payments',
  key: (d) => `${d.account_id}|${d.period}`,
  fields: ['status', 'account_id', 'period'],
  indexes: [['status', 'account_id', 'period'], ['account_id', 'period']],
});

export const invoiceMonths = defineCollection<InvoiceMonthDoc>({
  name: 'invoice_months',
  key: (d) => `${d.account_id}|${d.period}`,
  fields: ['status', 'account_id', 'period'],
  indexes: [['status', 'account_id', 'period']],
});

export const invoices = defineCollection<InvoiceDoc>({
  name: 'invoices',
  key: (d) => `${d.account_id}|${d.number}`,
  fields: ['account_id', 'period', 'number'],
  indexes: [['account_id', 'period']],
});

const accountOf = (streamId: string, prefix: string): string | null =>
  streamId.startsWith(prefix) && streamId.length > prefix.length ? streamId.slice(prefix.length) : null;

export const invoicesProjection: Projection = {
  name: 'invoices',
  collections: [invoiceMonths, invoices, invoicePayments],
  eventTypes: ['LedgerPeriodClosed', 'InvoiceIssued', 'InvoicePaid', 'InvoicePaymentFailed', 'InvoiceDunningLapsed'],
  apply(raw: RecordedEvent, ctx: ProjectionContext) {
    if (raw.type === 'LedgerPeriodClosed') return applyClosed(raw, ctx);
    if (raw.type === 'InvoiceIssued') return applyIssued(raw, ctx);
    return applyPayment(raw, ctx);
  },
};

/** A closed ledger month waits for its invoice. */
async function applyClosed(raw: RecordedEvent, ctx: ProjectionContext): Promise<void> {
  const accountId = accountOf(raw.streamId, LEDGER_STREAM_PREFIX);
  const period = (raw.data as LedgerPeriodClosed['data'] | null)?.period;
  if (!accountId || typeof period !== 'string') return;
  const key = `${accountId}|${period}`;
  const known = await ctx.get(invoiceMonths, key);
  if (known?.status === 'issued') return;
  ctx.upsert(invoiceMonths, { account_id: accountId, period, closing_revision: raw.revision, status: 'pending', number: null });
}

async function applyIssued(raw: RecordedEvent, ctx: ProjectionContext): Promise<void> {
  const accountId = accountOf(raw.streamId, INVOICES_STREAM_PREFIX);
  const d = raw.data as InvoiceIssued['data'] | null;
  if (!accountId || !d?.invoice || typeof d.invoice.number !== 'string') return;
  const paidSince = (await ctx.get(invoicePayments, `${accountId}|${d.invoice.period}`))?.status === 'paid';
  const inv: Invoice = paidSince ? { ...d.invoice, status: 'paid' } : d.invoice;
  ctx.upsert(invoices, { account_id: accountId, number: inv.number, period: inv.period, invoice: inv, due_cents: d.due_cents, payment_ref: d.payment_ref });
  const month = await ctx.get(invoiceMonths, `${accountId}|${inv.period}`);
  ctx.upsert(invoiceMonths, { account_id: accountId, period: inv.period, closing_revision: month?.closing_revision ?? -1, status: 'issued', number: inv.number });
}

/** The payment events of an invoice: the issued invoice's status, and the month's dunning. */
async function applyPayment(raw: RecordedEvent, ctx: ProjectionContext): Promise<void> {
  const accountId = accountOf(raw.streamId, INVOICES_STREAM_PREFIX);
  const e = { type: raw.type, data: raw.data } as InvoiceEvent;
  if (!accountId || e.type === 'InvoiceIssued' || typeof e.data?.period !== 'string') return;
  const key = `${accountId}|${e.data.period}`;
  const known = await ctx.get(invoicePayments, key);
  if (e.type === 'InvoicePaymentFailed') {
    if (!known) ctx.upsert(invoicePayments, { account_id: accountId, period: e.data.period, status: 'failing', since: e.data.at, grace_until: e.data.grace_until });
    return;
  }
  if (e.type === 'InvoiceDunningLapsed') {
    if (known?.status === 'failing') ctx.upsert(invoicePayments, { ...known, status: 'lapsed' });
    return;
  }
  // Kept when paid before the invoice was issued (a report that overtook the issue): the issue reads it.
  ctx.upsert(invoicePayments, { account_id: accountId, period: e.data.period, since: known?.since ?? e.data.at, grace_until: known?.grace_until ?? e.data.at, status: 'paid' });
  const month = await ctx.get(invoiceMonths, key);
  const doc = month?.number ? await ctx.get(invoices, `${accountId}|${month.number}`) : null;
  if (doc) ctx.upsert(invoices, { ...doc, invoice: { ...doc.invoice, status: 'paid' } });
}
