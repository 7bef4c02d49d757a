/**
 * Self-serve billing on the account page: an upgrade or a Pro membership (prorated, paid at once),
 * a downgrade (from the month's end), a credit pack. Each goes through the ledger's decider like
 * the CLI's commands do; what costs money is paid through the Billing port first, and given back
 * when the ledger then refuses it.
 */
import type { Billing } from '../../src/core/billing.port.js';
import type { Clock } from '../../src/core/clock.js';
import { badRequest } from '../../src/core/errors.js';
import { CREDIT_PACKS, type Tier } from '../../src/domain/plans.js';
import { stateAt } from '../../src/domain/ledger/ledger.figures.js';
import type { Proration } from '../../src/domain/ledger/proration.js';
import { quotePro, quoteUpgrade, requireQuoted } from '../../src/domain/ledger/plan-quotes.js';
import type { Ledger, LedgerCommand, LedgerOutcome } from '../../src/domain/ledger/ledger.commands.js';

export interface BillingDeps {
  /** The ledgers' write side (commands/ledger's handler, as the application wires it). */
  ledger: Ledger;
  billing: Billing;
  clock: Clock;
}

/** What an upgrade to `tier` costs now (what the page shows before the user confirms). */
export async function upgradeQuote(deps: BillingDeps, accountId: string, tier: Tier): Promise<Proration> {
  const now = deps.clock.now();
  return quoteUpgrade(stateAt(await deps.ledger.state(accountId), now), tier, now);
}

/** What the Pro membership costs now, for the rest of the month. */
export async function proQuote(deps: BillingDeps, accountId: string): Promise<Proration> {
  const now = deps.clock.now();
  return quotePro(stateAt(await deps.ledger.state(accountId), now), now);
}

/**
 * Pays `amount_cents` and records `command(payment_ref)`; a refusal by the ledger after the
 * payment gives the payment back. The idempotency key names the ledger state the price was
 * quoted on (its last hash): the same form sent twice on that state is one payment, which the
 * ledger records once (the second is a no-op, so nothing is refunded); a later purchase is
 * quoted on a later state and paid anew.
 */
async function payThenRecord(
  deps: BillingDeps,
  accountId: string,
  payment: { amount_cents: number; description: string; idempotency_key: string },
  command: (paymentRef: string) => LedgerCommand,
): Promise<LedgerOutcome> {
  const { payment_ref } = payment.amount_cents > 0 ? await deps.billing.charge({ account_id: accountId, ...payment }) : { payment_ref: 'none' };
  try {
    return await deps.ledger.execute(accountId, command(payment_ref));
  } catch (err) {
    if (payment_ref !== 'none') await deps.billing.refund(payment_ref, err instanceof Error ? err.message : String(err));
    throw err;
  }
}

/** Upgrades at once; `confirmedCents` is the prorated amount the user saw and confirmed. */
export async function upgradePlan(deps: BillingDeps, accountId: string, tier: Tier, confirmedCents: number): Promise<LedgerOutcome> {
  const now = deps.clock.now();
  const state = stateAt(await deps.ledger.state(accountId), now);
  const quote = quoteUpgrade(state, tier, now);
  requireQuoted(quote, confirmedCents);
  return payThenRecord(
    deps,
    accountId,
    { amount_cents: quote.amount_cents, description: `Upgrade from ${state.tier} to ${tier}, ${quote.days} of ${quote.days_in_month} days`, idempotency_key: `upgrade:${tier}:${state.last_hash}` },
    (payment_ref) => ({ type: 'UpgradePlan', data: { tier, amount_cents: quote.amount_cents, payment_ref } }),
  );
}

/** A cheaper plan from the end of the month. */
export function downgradePlan(deps: BillingDeps, accountId: string, tier: Tier): Promise<LedgerOutcome> {
  return deps.ledger.execute(accountId, { type: 'DowngradePlan', data: { tier } });
}

/** Starts the Pro membership at once; `confirmedCents` is the prorated amount shown. */
export async function startPro(deps: BillingDeps, accountId: string, confirmedCents: number): Promise<LedgerOutcome> {
  const now = deps.clock.now();
  const state = stateAt(await deps.ledger.state(accountId), now);
  const quote = quotePro(state, now);
  requireQuoted(quote, confirmedCents);
  return payThenRecord(
    deps,
    accountId,
    { amount_cents: quote.amount_cents, description: `Pro membership, ${quote.days} of ${quote.days_in_month} days`, idempotency_key: `pro:${state.last_hash}` },
    (payment_ref) => ({ type: 'StartPro', data: { amount_cents: quote.amount_cents, payment_ref } }),
  );
}

/** Ends the Pro membership at once (what was paid for this month is not given back). */
export function endPro(deps: BillingDeps, accountId: string): Promise<LedgerOutcome> {
  return deps.ledger.execute(accountId, { type: 'SetPro', data: { on: false } });
}

/**
 * Buys one of the packs on sale. `purchaseId` is the purchase's reference (a nonce in the form):
 * the same form sent twice buys once, as the ledger credits a reference once.
 */
export async function buyPack(deps: BillingDeps, accountId: string, packId: string, purchaseId: string): Promise<LedgerOutcome> {
  const pack = CREDIT_PACKS.find((p) => p.id === packId);
  if (!pack) throw badRequest(`No pack ${packId} is on sale`, { pack: packId });
  if (!/^[A-Za-z0-9_-]{8,64}$/.test(purchaseId)) throw badRequest('The purchase reference is malformed');
  const price = Math.round(pack.price_usd * 100);
  return payThenRecord(
    deps,
    accountId,
    { amount_cents: price, description: `Credit pack, ${pack.credits} credits`, idempotency_key: `pack:${pack.id}:${purchaseId}` },
    (payment_ref) => ({ type: 'PurchasePack', data: { pack_id: `${pack.id}-${purchaseId}`, credits: pack.credits, price_cents: price, payment_ref } }),
  );
}
