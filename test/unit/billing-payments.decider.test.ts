import { expect } from 'chai';
import { deciderSpec } from '../support/decider-spec.js';
import { invoiceDecider, type InvoiceCommand } from '../../src/domain/billing/invoice.decider.js';
import { customerDecider, processorEventDecider } from '../../src/domain/billing/payments.decider.js';
import type { InvoiceEvent } from '../../src/domain/billing/billing.events.js';
import type { Invoice } from '../../src/domain/billing/invoice.js';

const now = new Date('2024-05-02T09:00:00.000Z');
const at = now.toISOString();
const invoice = (status: Invoice['status']): Invoice => ({
  number: 'ABC-0001',
  account_id: 'acct_abc',
  email: null,
  period: '2024-04',
  issued_at: at,
  currency: 'usd',
  lines: [{ kind: 'plan', description: 'Hobbyist plan, April 2024', quantity: 1, unit_amount_cents: 1900, amount_cents: 1900 }],
  total_cents: 1900,
  status,
});
const issued = (status: Invoice['status']): InvoiceEvent => ({ type: 'InvoiceIssued', data: { invoice: invoice(status), due_cents: 1900, payment_ref: 'in_1', at } });
const failed: InvoiceEvent = { type: 'InvoicePaymentFailed', data: { period: '2024-04', payment_ref: 'in_1', grace_until: '2024-05-16T09:00:00.000Z', at } };
const paid: InvoiceEvent = { type: 'InvoicePaid', data: { period: '2024-04', payment_ref: 'in_1', at } };
const cmd = {
  failed: { type: 'RecordPaymentFailed', period: '2024-04', payment_ref: 'in_1' } as InvoiceCommand,
  paid: { type: 'RecordInvoicePaid', period: '2024-04', payment_ref: 'in_1' } as InvoiceCommand,
  lapse: { type: 'LapseDunning', period: '2024-04' } as InvoiceCommand,
};

describe('How a month\'s invoice is paid (the invoice decider)', () => {
  it('starts dunning on the first failure, with a grace of 14 days, and never twice', () => {
    deciderSpec(invoiceDecider).given([issued('open')]).when(cmd.failed, now).then([failed]);
    deciderSpec(invoiceDecider).given([issued('open'), failed]).when(cmd.failed, now).then([]);
  });

  it('ends dunning when the invoice is paid, once; a report of a payment it recorded at issue adds nothing', () => {
    deciderSpec(invoiceDecider).given([issued('open'), failed]).when(cmd.paid, now).then([paid]);
    deciderSpec(invoiceDecider).given([issued('open'), failed, paid]).when(cmd.paid, now).then([]);
    deciderSpec(invoiceDecider).given([issued('paid')]).when(cmd.paid, now).then([]);
    deciderSpec(invoiceDecider).given([issued('paid')]).when(cmd.failed, now).then([]);
  });

  it('takes the reports in any order: paid before it was issued, the issued invoice reads paid', () => {
    const state = [paid, issued('open')].reduce((st, e) => invoiceDecider.evolve(st, e), invoiceDecider.initialState());
    expect(state.issued.get('2024-04')!.status).to.equal('paid');
    deciderSpec(invoiceDecider).given([paid]).when(cmd.failed, now).then([]);
  });

  it('lapses only once the grace is over, unpaid, and once', () => {
    const over = new Date('2024-05-16T09:00:00.000Z');
    deciderSpec(invoiceDecider).given([issued('open'), failed]).when(cmd.lapse, new Date('2024-05-16T08:59:59.000Z')).then([]);
    deciderSpec(invoiceDecider).given([issued('open'), failed]).when(cmd.lapse, over).then([{ type: 'InvoiceDunningLapsed', data: { period: '2024-04', at: over.toISOString() } }]);
    deciderSpec(invoiceDecider).given([issued('open'), failed, paid]).when(cmd.lapse, over).then([]);
    deciderSpec(invoiceDecider).given([issued('open'), failed, { type: 'InvoiceDunningLapsed', data: { period: '2024-04', at } }]).when(cmd.lapse, over).then([]);
  });
});

describe('The card processor\'s side of an account', () => {
  it('links the first customer and keeps it', () => {
    const linked = { type: 'ProcessorCustomerLinked' as const, data: { processor: 'Stripe', customer_ref: 'cus_1', at } };
    deciderSpec(customerDecider).given([]).when({ type: 'LinkCustomer', processor: 'Stripe', customer_ref: 'cus_1' }, now).then([linked]);
    deciderSpec(customerDecider).given([linked]).when({ type: 'LinkCustomer', processor: 'Stripe', customer_ref: 'cus_2' }, now).then([]);
  });

  it('records an event once by its id', () => {
    const record = { type: 'RecordProcessorEvent' as const, processor: 'Stripe', event_id: 'evt_1', event_type: 'invoice.paid', account_id: 'acct_abc', outcome: 'invoice_paid' };
    const recorded = { type: 'ProcessorEventRecorded' as const, data: { processor: 'Stripe', event_id: 'evt_1', event_type: 'invoice.paid', account_id: 'acct_abc', outcome: 'invoice_paid', at } };
    deciderSpec(processorEventDecider).given([]).when(record, now).then([recorded]);
    deciderSpec(processorEventDecider).given([recorded]).when(record, now).then([]);
  });
});
