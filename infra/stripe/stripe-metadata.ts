/**
 * A purchase of the account page as Stripe metadata (strings only), written on the Checkout
 * Session and its PaymentIntent and read back from `checkout.session.completed`.
 */
import type { Purchase } from '../../src/core/billing.port.js';

export function purchaseMetadata(accountId: string, purchase: Purchase): Record<string, string> {
  switch (purchase.kind) {
    case 'upgrade':
      return { account_id: accountId, purchase: 'upgrade', tier: purchase.tier, amount_cents: String(purchase.amount_cents) };
    case 'pro':
      return { account_id: accountId, purchase: 'pro', amount_cents: String(purchase.amount_cents) };
    case 'pack':
      return { account_id: accountId, purchase: 'pack', pack: purchase.pack, purchase_id: purchase.purchase_id };
  }
}

const cents = (text: string | undefined): number | null => (text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : null);

/** The purchase the metadata names, or null when it names none (a session this service did not create). */
export function purchaseOf(metadata: Record<string, string> | null | undefined): { account_id: string; purchase: Purchase } | null {
  const m = metadata ?? {};
  const account_id = m['account_id'];
  if (!account_id) return null;
  const amount_cents = cents(m['amount_cents']);
  if (m['purchase'] === 'upgrade' && m['tier'] && amount_cents !== null) return { account_id, purchase: { kind: 'upgrade', tier: m['tier'], amount_cents } };
  if (m['purchase'] === 'pro' && amount_cents !== null) return { account_id, purchase: { kind: 'pro', amount_cents } };
  if (m['purchase'] === 'pack' && m['pack'] && m['purchase_id']) return { account_id, purchase: { kind: 'pack', pack: m['pack'], purchase_id: m['purchase_id'] } };
  return null;
}
