import type { Billing, InvoicePayment, PaymentOutcome, PurchasePayment } from '../../src/core/billing.port.js';
import { sha256Hex } from '../../src/core/sha256.js';

/**
 * The embedded default of the Billing port: every payment succeeds at once and nothing leaves the
 * machine (a demo, a self-hosted install, the tests). The reference is derived from the
 * idempotency key, so a retried request names the same payment, as a processor would answer it.
 * No customer, no hosted page, no portal, no webhooks.
 */
export class EmbeddedBilling implements Billing {
  readonly simulated = true;
  readonly processor = null;
  readonly checkoutOrigins = [];
  readonly webhooks = null;

  createCustomer(): Promise<string | null> {
    return Promise.resolve(null);
  }

  pay(request: PurchasePayment): Promise<PaymentOutcome> {
    return Promise.resolve({ status: 'paid', payment_ref: reference(request.account_id, request.idempotency_key) });
  }

  chargeInvoice(invoice: InvoicePayment): Promise<{ payment_ref: string | null; paid: boolean }> {
    const due = invoice.total_cents - invoice.paid_cents;
    return Promise.resolve({ payment_ref: due > 0 ? reference(invoice.account_id, invoice.idempotency_key) : null, paid: true });
  }

  refund(): Promise<void> {
    // Nothing was taken, so nothing is given back; the ledger never recorded the refused purchase.
    return Promise.resolve();
  }

  portalUrl(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

const reference = (accountId: string, key: string) => `pay_${sha256Hex(`${accountId}\n${key}`).slice(0, 24)}`;
