/**
 * Invoices read models:
 * - `invoice_months`: each closed ledger month of each account, `pending` until its invoice is
 *   issued (what the invoice reactor works through);
 * - `invoices`: every issued invoice, as the account page lists it and serves it (JSON and PDF).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { Invoice } from '../../src/domain/billing/invoice.js';
import { INVOICES_STREAM_PREFIX, type InvoiceIssued } from '../../src/domain/billing/billing.events.js';
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
  collections: [invoiceMonths, invoices],
  eventTypes: ['LedgerPeriodClosed', 'InvoiceIssued'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    if (raw.type === 'LedgerPeriodClosed') {
      const accountId = accountOf(raw.streamId, LEDGER_STREAM_PREFIX);
      const period = (raw.data as LedgerPeriodClosed['data'] | null)?.period;
      if (!accountId || typeof period !== 'string') return;
      const key = `${accountId}|${period}`;
      const known = await ctx.get(invoiceMonths, key);
      if (known?.status === 'issued') return;
      ctx.upsert(invoiceMonths, { account_id: accountId, period, closing_revision: raw.revision, status: 'pending', number: null });
      return;
    }
    const accountId = accountOf(raw.streamId, INVOICES_STREAM_PREFIX);
    const d = raw.data as InvoiceIssued['data'] | null;
    if (!accountId || !d?.invoice || typeof d.invoice.number !== 'string') return;
    const inv = d.invoice;
    ctx.upsert(invoices, { account_id: accountId, number: inv.number, period: inv.period, invoice: inv, due_cents: d.due_cents, payment_ref: d.payment_ref });
    const month = await ctx.get(invoiceMonths, `${accountId}|${inv.period}`);
    ctx.upsert(invoiceMonths, { account_id: accountId, period: inv.period, closing_revision: month?.closing_revision ?? -1, status: 'issued', number: inv.number });
  },
};
