/**
 * An account's invoices, decided on `invoices-<account_id>`: one invoice per closed month,
 * numbered in the account's sequence, and how its payment went (paid, failed into dunning, lapsed).
 * The month's bill, the payment of what was due and the signed head are made before the command
 * (commands/billing/invoice.handler.ts); issuing a month already issued adds nothing. A card
 * processor's reports may arrive in any order and more than once: each changes the state once.
 */
import type { Decider } from '../../core/decider.js';
import type { InvoiceEvent } from './billing.events.js';
import { graceUntil } from './dunning.js';
import type { Invoice } from './invoice.js';

/** How a month's payment went, once the processor said anything about it. */
export interface InvoicePaymentState {
  paid: boolean;
  /** Set by the first failure: dunning runs until paid or lapsed. */
  failed: { grace_until: string; since: string } | null;
  lapsed: boolean;
}

export interface InvoicesState {
  issued: Map<string, Invoice>;
  payments: Map<string, InvoicePaymentState>;
}

/** The invoice as billed, without the number its issue gives it. */
export interface IssueInvoice {
  type: 'IssueInvoice';
  invoice: Omit<Invoice, 'number'>;
  due_cents: number;
  payment_ref: string | null;
}
export type RecordInvoicePaid = { type: 'RecordInvoicePaid'; period: string; payment_ref: string };
export type RecordPaymentFailed = { type: 'RecordPaymentFailed'; period: string; payment_ref: string };
/** The dunning sweep, once the grace is over: the handler has cancelled the plan first. */
export type LapseDunning = { type: 'LapseDunning'; period: string };
export type InvoiceCommand = IssueInvoice | RecordInvoicePaid | RecordPaymentFailed | LapseDunning;

/** `acct_1a2b3c4d…` → `1A2B3C4D`: the readable part of an invoice number. */
const numberPrefix = (accountId: string) => accountId.replace(/^acct_/, '').replace(/[^A-Za-z0-9]/g, '').slice(0, 8).toUpperCase() || 'ACCOUNT';

const NO_PAYMENT: InvoicePaymentState = { paid: false, failed: null, lapsed: false };

/** The invoice of `period` with its payment as the state knows it (an `open` invoice paid later reads `paid`). */
function settled(invoice: Invoice, payment: InvoicePaymentState | undefined): Invoice {
  return payment?.paid && invoice.status !== 'paid' ? { ...invoice, status: 'paid' } : invoice;
}

function evolve(s: InvoicesState, e: InvoiceEvent): InvoicesState {
  const payment = (period: string) => s.payments.get(period) ?? NO_PAYMENT;
  switch (e.type) {
    case 'InvoiceIssued':
      return { ...s, issued: new Map(s.issued).set(e.data.invoice.period, settled(e.data.invoice, s.payments.get(e.data.invoice.period))) };
    case 'InvoicePaid': {
      const payments = new Map(s.payments).set(e.data.period, { ...payment(e.data.period), paid: true });
      const invoice = s.issued.get(e.data.period);
      return { issued: invoice ? new Map(s.issued).set(e.data.period, { ...invoice, status: 'paid' }) : s.issued, payments };
    }
    case 'InvoicePaymentFailed':
      return { ...s, payments: new Map(s.payments).set(e.data.period, { ...payment(e.data.period), failed: { grace_until: e.data.grace_until, since: e.data.at } }) };
    case 'InvoiceDunningLapsed':
      return { ...s, payments: new Map(s.payments).set(e.data.period, { ...payment(e.data.period), lapsed: true }) };
  }
}

/** Whether the month still waits for its payment: failed, not paid, not lapsed. */
export const inDunning = (p: InvoicePaymentState | undefined): boolean => Boolean(p?.failed && !p.paid && !p.lapsed);

export const invoiceDecider: Decider<InvoicesState, InvoiceCommand, InvoiceEvent> = {
  initialState: () => ({ issued: new Map(), payments: new Map() }),
  evolve,
  decide(s, command, now) {
    const at = now.toISOString();
    const payment = (period: string) => s.payments.get(period);
    switch (command.type) {
      case 'IssueInvoice': {
        const { invoice, due_cents, payment_ref } = command;
        if (s.issued.has(invoice.period)) return [];
        const number = `${numberPrefix(invoice.account_id)}-${String(s.issued.size + 1).padStart(4, '0')}`;
        return [{ type: 'InvoiceIssued', data: { invoice: { number, ...invoice }, due_cents, payment_ref, at: invoice.issued_at } }];
      }
      case 'RecordInvoicePaid': {
        const p = payment(command.period);
        // Paid when issued and never failed: the processor's report confirms what is recorded.
        if (p?.paid || (s.issued.get(command.period)?.status === 'paid' && !p?.failed)) return [];
        return [{ type: 'InvoicePaid', data: { period: command.period, payment_ref: command.payment_ref, at } }];
      }
      case 'RecordPaymentFailed': {
        const p = payment(command.period);
        if (p?.paid || p?.failed || s.issued.get(command.period)?.status === 'paid') return [];
        return [{ type: 'InvoicePaymentFailed', data: { period: command.period, payment_ref: command.payment_ref, grace_until: graceUntil(now), at } }];
      }
      case 'LapseDunning': {
        const p = payment(command.period);
        if (!inDunning(p) || p!.failed!.grace_until > at) return [];
        return [{ type: 'InvoiceDunningLapsed', data: { period: command.period, at } }];
      }
    }
  },
};
