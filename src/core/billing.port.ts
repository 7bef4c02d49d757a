/**
 * Billing port: takes a payment for what the account page sells (an upgrade's or a membership's
 * prorated price, a credit pack, an invoice's amount still due).
 * Adapters: infra/billing/embedded-billing.ts (the default: every payment succeeds; nothing leaves
 * the machine). A card processor such as Stripe plugs in here: `charge` becomes a PaymentIntent
 * confirmed with the customer's saved card under `idempotency_key`, `refund` a Refund. What was
 * bought and paid is recorded by the ledger (the `payment_ref` on its events), never by the adapter.
 */

export interface PaymentRequest {
  account_id: string;
  amount_cents: number;
  /** What the customer sees on the statement. */
  description: string;
  /** The same request again (a retry after a crash) is the same payment, never a second one. */
  idempotency_key: string;
}

export interface Billing {
  /**
   * True when no money moves (the embedded adapter): every payment step of the account page says
   * so, so that nobody takes a recorded payment for a real one.
   */
  readonly simulated: boolean;
  /** Resolves once paid; rejects with PaymentDeclined when the payment is refused. */
  charge(request: PaymentRequest): Promise<{ payment_ref: string }>;
  /** Gives a payment back in full: the ledger refused what it paid for (e.g. a race with another change). */
  refund(paymentRef: string, reason: string): Promise<void>;
}

/** The processor refused the payment; nothing was bought. */
export class PaymentDeclined extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PaymentDeclined';
  }
}
