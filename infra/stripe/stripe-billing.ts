/**
 * The Billing port on Stripe (the official `stripe` package): a Customer per account; a purchase of
 * the account page charged to the saved card where the customer has one, else paid on a Checkout
 * Session (Stripe's hosted page, which saves the card for next time); each month's invoice as a
 * Stripe Invoice with the ledger's lines as invoice items, what was paid when bought credited
 * against it, finalised and paid; Refunds; Customer Portal sessions; webhooks verified with
 * `stripe.webhooks.constructEvent` (stripe-webhook-events.ts reads them).
 *
 * Every POST carries an idempotency key derived from the ledger's own ids (the account id, then the
 * purchase's key, which names the ledger state it was quoted on or the pack's purchase reference,
 * or the invoice's month): a retry (stripe-node's own, the form sent twice, a crash and a rerun of
 * the invoice issuer within Stripe's 24 hours) is answered with the first request's result.
 */
import Stripe from 'stripe';
import type { Billing, ChargedLine, InvoicePayment, PaymentOutcome, ProcessorEvent, PurchasePayment } from '../../src/core/billing.port.js';
import { WebhookSignatureInvalid } from '../../src/core/billing.port.js';
import { processorEventOf } from './stripe-webhook-events.js';
import { purchaseMetadata } from './stripe-metadata.js';

export interface StripeSettings {
  secretKey: string;
  /** Another API base (stripe-mock on loopback in the tests); null: Stripe's own. */
  apiBase: string | null;
  /** The webhook endpoint's signing secret; null: webhooks are refused (404). */
  webhookSecret: string | null;
}

/** The client of `settings`: Stripe's API, or the base given (plain HTTP allowed there, for stripe-mock). */
export function stripeClient(settings: Pick<StripeSettings, 'secretKey' | 'apiBase'>): Stripe {
  const base = settings.apiBase ? new URL(settings.apiBase) : null;
  return new Stripe(settings.secretKey, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    appInfo: { name: 'scores-service' },
    ...(base ? { host: base.hostname, port: base.port || (base.protocol === 'http:' ? 80 : 443), protocol: base.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
}

export class StripeBilling implements Billing {
  readonly simulated = false;
  readonly processor = 'Stripe';
  /** Stripe Checkout's pages (the Customer Portal is reached by a link, which the policy does not govern). */
  readonly checkoutOrigins = ['https://checkout.stripe.com'];
  readonly webhooks: Billing['webhooks'];
  private readonly stripe: Stripe;

  constructor(settings: StripeSettings) {
    this.stripe = stripeClient(settings);
    const secret = settings.webhookSecret;
    this.webhooks = secret ? { verify: (raw, signature) => this.verify(raw, signature, secret) } : null;
  }

  async createCustomer(accountId: string): Promise<string> {
    const customer = await this.stripe.customers.create({ description: `Scores API account ${accountId}`, metadata: { account_id: accountId } }, { idempotencyKey: `${accountId}:customer` });
    return customer.id;
  }

  async pay(request: PurchasePayment): Promise<PaymentOutcome> {
    const key = (step: string) => `${request.account_id}:${request.idempotency_key}:${step}`;
    const card = request.customer_ref ? await this.savedCard(request.customer_ref) : null;
    if (card) {
      const paid = await this.chargeCard(request, card, key('intent'));
      if (paid) return { status: 'paid', payment_ref: paid };
    }
    const metadata = purchaseMetadata(request.account_id, request.purchase);
    const session = await this.stripe.checkout.sessions.create(
      {
        mode: 'payment',
        ...(request.customer_ref ? { customer: request.customer_ref } : {}),
        client_reference_id: request.account_id,
        line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: request.amount_cents, product_data: { name: request.description } } }],
        payment_intent_data: { setup_future_usage: 'off_session', description: request.description, metadata },
        metadata,
        success_url: `${request.return_url}?checkout=done`,
        cancel_url: `${request.return_url}?checkout=cancelled`,
      },
      { idempotencyKey: key('checkout') },
    );
    if (!session.url) throw new Error(`Stripe answered Checkout Session ${session.id} without a URL`);
    return { status: 'redirect', url: session.url };
  }

  /** The customer's card for payments without them (the default one, else the first saved), or null. */
  private async savedCard(customerRef: string): Promise<string | null> {
    const customer = await this.stripe.customers.retrieve(customerRef);
    if ('deleted' in customer && customer.deleted) return null;
    const preferred = customer.invoice_settings?.default_payment_method;
    if (preferred) return typeof preferred === 'string' ? preferred : preferred.id;
    const cards = await this.stripe.customers.listPaymentMethods(customerRef, { type: 'card', limit: 1 });
    return cards.data[0]?.id ?? null;
  }

  /**
   * The purchase charged off-session to `card`: the PaymentIntent's id once it succeeded, null when
   * the card needs the customer (declined, authentication asked): the Checkout Session then takes it.
   */
  private async chargeCard(request: PurchasePayment, card: string, idempotencyKey: string): Promise<string | null> {
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: request.amount_cents,
          currency: 'usd',
          customer: request.customer_ref!,
          payment_method: card,
          off_session: true,
          confirm: true,
          description: request.description,
          metadata: purchaseMetadata(request.account_id, request.purchase),
        },
        { idempotencyKey },
      );
      return intent.status === 'succeeded' ? intent.id : null;
    } catch (err) {
      if (err instanceof Stripe.errors.StripeCardError) return null;
      throw err;
    }
  }

  async chargeInvoice(invoice: InvoicePayment): Promise<{ payment_ref: string | null; paid: boolean }> {
    const key = (step: string) => `${invoice.account_id}:${invoice.idempotency_key}:${step}`;
    const customer = invoice.customer_ref;
    if (!customer) throw new Error(`account ${invoice.account_id} has no Stripe customer to invoice`);
    const metadata = { account_id: invoice.account_id, period: invoice.period };
    const draft = await this.stripe.invoices.create(
      { customer, currency: 'usd', collection_method: 'charge_automatically', auto_advance: false, pending_invoice_items_behavior: 'exclude', description: `Scores API, ${invoice.period}`, metadata },
      { idempotencyKey: key('invoice') },
    );
    for (const [i, line] of invoice.lines.entries()) await this.addLine(customer, draft.id, line, metadata, key(`line-${i}`));
    if (invoice.paid_cents > 0) {
      // Paid when bought (each its own payment): credited, so the invoice's total is the ledger's and only the rest is collected.
      await this.stripe.customers.createBalanceTransaction(customer, { amount: -invoice.paid_cents, currency: 'usd', description: `Paid when bought, ${invoice.period}`, metadata }, { idempotencyKey: key('prepaid') });
    }
    const final = await this.stripe.invoices.finalizeInvoice(draft.id, { auto_advance: true }, { idempotencyKey: key('finalize') });
    if (final.status === 'paid' || final.amount_due === 0) return { payment_ref: final.id, paid: true };
    return { payment_ref: final.id, paid: await this.collect(customer, final.id, key('pay')) };
  }

  private async addLine(customer: string, invoice: string, line: ChargedLine, metadata: Record<string, string>, idempotencyKey: string): Promise<void> {
    await this.stripe.invoiceItems.create(
      { customer, invoice, currency: 'usd', description: line.description, quantity: line.quantity, unit_amount_decimal: Stripe.Decimal.from(line.unit_amount_cents), metadata: { ...metadata, kind: line.kind } },
      { idempotencyKey },
    );
  }

  /** Pays a finalised invoice with the saved card; false when Stripe could not (it retries, and reports by webhook). */
  private async collect(customer: string, invoiceId: string, idempotencyKey: string): Promise<boolean> {
    const card = await this.savedCard(customer);
    try {
      const paid = await this.stripe.invoices.pay(invoiceId, { off_session: true, ...(card ? { payment_method: card } : {}) }, { idempotencyKey });
      return paid.status === 'paid';
    } catch (err) {
      if (err instanceof Stripe.errors.StripeCardError || err instanceof Stripe.errors.StripeInvalidRequestError) return false;
      throw err;
    }
  }

  async refund(paymentRef: string, reason: string): Promise<void> {
    await this.stripe.refunds.create({ payment_intent: paymentRef, metadata: { reason: reason.slice(0, 500) } }, { idempotencyKey: `refund:${paymentRef}` });
  }

  async portalUrl(customerRef: string | null, returnUrl: string, idempotencyKey: string): Promise<string | null> {
    if (!customerRef) return null;
    const session = await this.stripe.billingPortal.sessions.create({ customer: customerRef, return_url: returnUrl }, { idempotencyKey });
    return session.url;
  }

  private async verify(raw: Buffer, signature: string, secret: string): Promise<ProcessorEvent> {
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(raw, signature, secret);
    } catch (err) {
      throw new WebhookSignatureInvalid(err instanceof Error ? err.message : String(err));
    }
    return processorEventOf(event, (id) => this.accountOfCustomer(id));
  }

  /** The account a Stripe customer was created for (its metadata), or null. */
  private async accountOfCustomer(customerId: string): Promise<string | null> {
    const customer = await this.stripe.customers.retrieve(customerId);
    if ('deleted' in customer && customer.deleted) return null;
    return customer.metadata?.['account_id'] ?? null;
  }
}
