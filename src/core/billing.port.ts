/**
 * Billing port: takes the payments of what the account page sells (an upgrade's or a membership's
 * prorated price, a credit pack) and of each month's invoice, gives a payment back, and tells what
 * a card processor reported (its webhooks).
 * Adapters: infra/billing/embedded-billing.ts (the default: every payment succeeds at once and
 * nothing leaves the machine) and infra/stripe/stripe-billing.ts (Stripe: Checkout Sessions, the
 * saved card, Invoices, Refunds, the Customer Portal, signed webhooks). What was bought and paid is
 * recorded by the ledger (the `payment_ref` on its events), never by the adapter.
 */

/** What a purchase of the account page buys: carried to a hosted payment page and back (the processor's webhook names it). */
export type Purchase =
  | { kind: 'upgrade'; tier: string; amount_cents: number }
  | { kind: 'pro'; amount_cents: number }
  | { kind: 'pack'; pack: string; purchase_id: string };

export interface PaymentRequest {
  account_id: string;
  /** The processor's customer of the account (`Billing.createCustomer`); null with a processor that has none. */
  customer_ref: string | null;
  amount_cents: number;
  /** What the customer sees on the statement. */
  description: string;
  /**
   * Derived from the ledger's own ids (the state the price was quoted on, the purchase's reference):
   * the same request again (a retry, the form sent twice) is the same payment, never a second one.
   */
  idempotency_key: string;
}

export interface PurchasePayment extends PaymentRequest {
  purchase: Purchase;
  /** The account page the customer comes back to from a hosted payment page (`?checkout=done|cancelled` is added). */
  return_url: string;
}

/**
 * `paid`: taken at once (the embedded billing, a saved card); the handler records the purchase.
 * `redirect`: the customer pays on the processor's page at `url`; the purchase is recorded when the
 * processor reports it paid (a `purchase_paid` notice), never before.
 */
export type PaymentOutcome = { status: 'paid'; payment_ref: string } | { status: 'redirect'; url: string };

/** A line of a month's invoice, as the ledger billed it (src/domain/billing/invoice.ts). */
export interface ChargedLine {
  kind: string;
  description: string;
  quantity: number;
  unit_amount_cents: number;
  amount_cents: number;
}

export interface InvoicePayment {
  account_id: string;
  customer_ref: string | null;
  period: string;
  /** Every line of the month's invoice; their sum is the invoice's total. */
  lines: ChargedLine[];
  total_cents: number;
  /** What the lines bought already paid when bought (prorations, packs): the rest is due now. */
  paid_cents: number;
  idempotency_key: string;
}

/** What a processor reported (a webhook), as the ledger and the invoices understand it. */
export type ProcessorNotice =
  | { kind: 'purchase_paid'; account_id: string; purchase: Purchase; payment_ref: string }
  | { kind: 'invoice_paid'; account_id: string; period: string; payment_ref: string }
  | { kind: 'invoice_payment_failed'; account_id: string; period: string; payment_ref: string }
  /** The customer cancelled in the processor's portal: the plan ends at the month's end, as `plan cancel`. */
  | { kind: 'subscription_cancelled'; account_id: string }
  /** An event the service has no use for (it is still recorded once). */
  | { kind: 'ignored'; account_id: string | null };

export interface ProcessorEvent {
  /** The processor's own id of the event: a repeat carries the same one. */
  id: string;
  type: string;
  notice: ProcessorNotice;
}

export interface Billing {
  /**
   * True when no money moves (the embedded adapter): every payment step of the account page says
   * so, so that nobody takes a recorded payment for a real one.
   */
  readonly simulated: boolean;
  /** The processor's name on the account page ("Stripe"); null when none takes the payments. */
  readonly processor: string | null;
  /** Origins of the processor's hosted payment pages, where a purchase's form is sent on to (the account pages' CSP allows them). */
  readonly checkoutOrigins: readonly string[];
  /** The processor's customer for the account, created now (the caller records it); null when the processor keeps none. */
  createCustomer(accountId: string): Promise<string | null>;
  /** Pays a purchase at once, or sends the customer to the processor's page. */
  pay(request: PurchasePayment): Promise<PaymentOutcome>;
  /**
   * Charges a month's invoice, its lines as they are. `paid` false: the processor is still
   * collecting (a declined card); it reports the outcome later (`invoice_paid`, `invoice_payment_failed`).
   * `payment_ref` null when nothing was charged.
   */
  chargeInvoice(invoice: InvoicePayment): Promise<{ payment_ref: string | null; paid: boolean }>;
  /** Gives a payment back in full: the ledger refused what it paid for (e.g. a race with another change). */
  refund(paymentRef: string, reason: string): Promise<void>;
  /** The processor's self-service page for cards, invoices and cancellation; null when there is none. */
  portalUrl(customerRef: string | null, returnUrl: string, idempotencyKey: string): Promise<string | null>;
  /**
   * Verifies a webhook's signature on its raw body and reads what it reports; throws
   * WebhookSignatureInvalid when it was not signed with the endpoint's secret. Null: the adapter
   * takes no webhooks.
   */
  readonly webhooks: { verify(rawBody: Buffer, signature: string): Promise<ProcessorEvent> } | null;
}

/** The processor refused the payment; nothing was bought. */
export class PaymentDeclined extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PaymentDeclined';
  }
}

/** A webhook whose signature does not verify: nothing it says is read. */
export class WebhookSignatureInvalid extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookSignatureInvalid';
  }
}
