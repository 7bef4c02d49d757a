/**
 * Billing events. Per account: `invoices-<account_id>` (an invoice per closed month, and how its
 * payment went) and `payments-<account_id>` (the card processor's customer). Per event a card
 * processor reported: `processor-event-<processor>-<event id>` (recorded once).
 */
import type { Invoice } from './invoice.js';

export const INVOICES_STREAM_PREFIX = 'invoices-';
export const invoicesStream = (accountId: string) => `${INVOICES_STREAM_PREFIX}${accountId}`;
export const PAYMENTS_STREAM_PREFIX = 'payments-';
export const paymentsStream = (accountId: string) => `${PAYMENTS_STREAM_PREFIX}${accountId}`;
export const PROCESSOR_EVENT_STREAM_PREFIX = 'processor-event-';
export const processorEventStream = (processor: string, eventId: string) => `${PROCESSOR_EVENT_STREAM_PREFIX}${processor.toLowerCase()}-${eventId}`;

/**
 * A month's invoice, issued once its ledger month closed: its lines and total never change. A
 * `status` of `open` is settled by `InvoicePaid`. `payment_ref` pays what was still due when it was
 * issued (plan, membership, overage; null when nothing was), the Billing port's reference;
 * prorations and packs were paid when bought.
 */
export interface InvoiceIssued {
  type: 'InvoiceIssued';
  data: { invoice: Invoice; due_cents: number; payment_ref: string | null; at: string };
}

/** The processor collected an invoice that was issued `open` (or failed before): dunning ends. */
export interface InvoicePaid {
  type: 'InvoicePaid';
  data: { period: string; payment_ref: string; at: string };
}

/**
 * The processor could not collect the month's invoice: dunning starts (the account page and an
 * email say so). Unless it is paid by `grace_until`, the plan falls back to free at the end of the
 * month that instant is in (`InvoiceDunningLapsed`). Recorded once per invoice; the processor's
 * later retries that fail add nothing.
 */
export interface InvoicePaymentFailed {
  type: 'InvoicePaymentFailed';
  data: { period: string; payment_ref: string; grace_until: string; at: string };
}

/** The grace ran out unpaid: the plan was cancelled (from the month's end, as `plan cancel`). */
export interface InvoiceDunningLapsed {
  type: 'InvoiceDunningLapsed';
  data: { period: string; at: string };
}

export type InvoiceEvent = InvoiceIssued | InvoicePaid | InvoicePaymentFailed | InvoiceDunningLapsed;

/** The account's customer at the card processor, linked once (the first one created stays). */
export interface ProcessorCustomerLinked {
  type: 'ProcessorCustomerLinked';
  data: { processor: string; customer_ref: string; at: string };
}

/**
 * An event a card processor reported, recorded once by its own id whatever it did (`outcome`):
 * the same event again, on any replica, changes nothing.
 */
export interface ProcessorEventRecorded {
  type: 'ProcessorEventRecorded';
  data: { processor: string; event_id: string; event_type: string; account_id: string | null; outcome: string; at: string };
}

export type BillingEvent = InvoiceEvent | ProcessorCustomerLinked | ProcessorEventRecorded;
