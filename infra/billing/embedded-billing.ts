import type { Billing, PaymentRequest } from '../../src/core/billing.port.js';
import { sha256Hex } from '../../src/core/sha256.js';

/**
 * The embedded default of the Billing port: every payment succeeds at once and nothing leaves the
 * machine (a demo, a self-hosted install, the tests). The reference is derived from the
 * idempotency key, so a retried request names the same payment, as a processor would answer it.
 */
export class EmbeddedBilling implements Billing {
  readonly simulated = true;

  charge(request: PaymentRequest): Promise<{ payment_ref: string }> {
    return Promise.resolve({ payment_ref: `pay_${sha256Hex(`${request.account_id}\n${request.idempotency_key}`).slice(0, 24)}` });
  }

  refund(): Promise<void> {
    // Nothing was taken, so nothing is given back; the ledger never recorded the refused purchase.
    return Promise.resolve();
  }
}
