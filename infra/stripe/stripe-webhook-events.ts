/**
 * A verified Stripe event, read as what it means to the ledger and the invoices (a ProcessorNotice):
 * - `checkout.session.completed` (and `checkout.session.async_payment_succeeded`), paid: the
 *   purchase its metadata names, paid by its PaymentIntent;
 * - `invoice.paid` / `invoice.payment_failed`: the month its metadata names (invoices this
 *   service created carry `account_id` and `period`);
 * - `customer.subscription.deleted`, and `customer.subscription.updated` set to cancel: the plan
 *   cancelled at the month's end;
 * - anything else: ignored (still recorded once).
 */
import type Stripe from 'stripe';
import type { ProcessorEvent, ProcessorNotice } from '../../src/core/billing.port.js';
import { purchaseOf } from './stripe-metadata.js';

const idOf = (x: string | { id: string } | null | undefined): string | null => (x === null || x === undefined ? null : typeof x === 'string' ? x : x.id);
const ignored = (account_id: string | null = null): ProcessorNotice => ({ kind: 'ignored', account_id });

export async function processorEventOf(event: Stripe.Event, accountOfCustomer: (customerId: string) => Promise<string | null>): Promise<ProcessorEvent> {
  return { id: event.id, type: event.type, notice: await noticeOf(event, accountOfCustomer) };
}

async function noticeOf(event: Stripe.Event, accountOfCustomer: (customerId: string) => Promise<string | null>): Promise<ProcessorNotice> {
  if (event.type === 'checkout.session.completed' || event.type === 'checkout.session.async_payment_succeeded') return checkoutNotice(event.data.object);
  if (event.type === 'invoice.paid' || event.type === 'invoice.payment_failed') return invoiceNotice(event.type, event.data.object);
  if (event.type === 'customer.subscription.deleted' || event.type === 'customer.subscription.updated') {
    const sub = event.data.object;
    const account = sub.metadata?.['account_id'] ?? (await accountOf(sub.customer, accountOfCustomer));
    const cancelled = event.type === 'customer.subscription.deleted' || sub.cancel_at_period_end || sub.status === 'canceled';
    return account && cancelled ? { kind: 'subscription_cancelled', account_id: account } : ignored(account);
  }
  return ignored();
}

async function accountOf(customer: string | { id: string } | null, lookup: (customerId: string) => Promise<string | null>): Promise<string | null> {
  const id = idOf(customer);
  return id ? lookup(id) : null;
}

function checkoutNotice(session: Stripe.Checkout.Session): ProcessorNotice {
  const bought = purchaseOf(session.metadata);
  const payment = idOf(session.payment_intent);
  // A delayed payment method completes unpaid: `async_payment_succeeded` follows once it is paid.
  if (!bought || !payment || session.payment_status !== 'paid') return ignored(bought?.account_id ?? session.client_reference_id ?? null);
  return { kind: 'purchase_paid', account_id: bought.account_id, purchase: bought.purchase, payment_ref: payment };
}

function invoiceNotice(type: 'invoice.paid' | 'invoice.payment_failed', invoice: Stripe.Invoice): ProcessorNotice {
  const account_id = invoice.metadata?.['account_id'];
  const period = invoice.metadata?.['period'];
  if (!account_id || !period || !invoice.id) return ignored(account_id ?? null);
  return type === 'invoice.paid' ? { kind: 'invoice_paid', account_id, period, payment_ref: invoice.id } : { kind: 'invoice_payment_failed', account_id, period, payment_ref: invoice.id };
}
