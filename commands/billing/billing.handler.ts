/**
 * Self-serve billing on the account page: an upgrade or a Pro membership (prorated, paid at once),
 * a downgrade (from the month's end), a credit pack. Each goes through the ledger's decider like
 * the CLI's commands do; what costs money is paid through the Billing port first (at once, or on
 * the processor's page, whose webhook then records it), and given back when the ledger refuses it.
 */
import type { Billing, Purchase } from '../../src/core/billing.port.js';
import type { Clock } from '../../src/core/clock.js';
import { badRequest } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { CREDIT_PACKS, type CreditPack, type Tier } from '../../src/domain/plans.js';
import { stateAt } from '../../src/domain/ledger/ledger.figures.js';
import type { Proration } from '../../src/domain/ledger/proration.js';
import { quotePro, quoteUpgrade, requireQuoted } from '../../src/domain/ledger/plan-quotes.js';
import type { Ledger, LedgerCommand, LedgerOutcome } from '../../src/domain/ledger/ledger.commands.js';
import { customerOf } from './customer.handler.js';

export interface BillingDeps {
  /** The ledgers' write side (commands/ledger's handler, as the application wires it). */
  ledger: Ledger;
  billing: Billing;
  clock: Clock;
  /** Where the processor's customer link is recorded (`payments-<account_id>`). */
  events: EventStore;
  /** The account page, where a customer sent to the processor's page comes back to. */
  returnUrl: string;
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
 * What the account page answers after a purchase: the ledger's outcome once paid, or the
 * processor's page where the customer pays (the purchase is recorded when the processor reports
 * it paid: commands/billing/processor-events.handler.ts).
 */
export type Purchased = LedgerOutcome | { redirect: string };

/** The ledger command that records `purchase` once paid by `paymentRef` (on the page, or reported by a webhook). */
export function purchaseCommand(purchase: Purchase, paymentRef: string): LedgerCommand {
  switch (purchase.kind) {
    case 'upgrade':
      return { type: 'UpgradePlan', data: { tier: purchase.tier as Tier, amount_cents: purchase.amount_cents, payment_ref: paymentRef } };
    case 'pro':
      return { type: 'StartPro', data: { amount_cents: purchase.amount_cents, payment_ref: paymentRef } };
    case 'pack': {
      const pack = packOnSale(purchase.pack);
      return { type: 'PurchasePack', data: { pack_id: `${pack.id}-${purchase.purchase_id}`, credits: pack.credits, price_cents: packPriceCents(pack), payment_ref: paymentRef } };
    }
  }
}

/**
 * Records a paid purchase through the ledger; when the ledger refuses it (a race with another
 * change, a quote that moved on), the payment is given back and the refusal thrown.
 */
export async function recordPaid(deps: Pick<BillingDeps, 'ledger' | 'billing'>, accountId: string, purchase: Purchase, paymentRef: string): Promise<LedgerOutcome> {
  try {
    return await deps.ledger.execute(accountId, purchaseCommand(purchase, paymentRef));
  } catch (err) {
    if (paymentRef !== 'none') await deps.billing.refund(paymentRef, err instanceof Error ? err.message : String(err));
    throw err;
  }
}

/**
 * Pays `amount_cents` and records the purchase, or sends the customer to the processor's page.
 * The idempotency key names the ledger state the price was quoted on (its last hash): the same
 * form sent twice on that state is one payment, which the ledger records once (the second is a
 * no-op, so nothing is refunded); a later purchase is quoted on a later state and paid anew.
 */
async function payThenRecord(deps: BillingDeps, accountId: string, payment: { amount_cents: number; description: string; idempotency_key: string; purchase: Purchase }): Promise<Purchased> {
  if (payment.amount_cents <= 0) return recordPaid(deps, accountId, payment.purchase, 'none');
  const customer_ref = await customerOf(deps, accountId);
  const outcome = await deps.billing.pay({ account_id: accountId, customer_ref, return_url: deps.returnUrl, ...payment });
  if (outcome.status === 'redirect') return { redirect: outcome.url };
  return recordPaid(deps, accountId, payment.purchase, outcome.payment_ref);
}

/** Upgrades at once; `confirmedCents` is the prorated amount the user saw and confirmed. */
export async function upgradePlan(deps: BillingDeps, accountId: string, tier: Tier, confirmedCents: number): Promise<Purchased> {
  const now = deps.clock.now();
  const state = stateAt(await deps.ledger.state(accountId), now);
  const quote = quoteUpgrade(state, tier, now);
  requireQuoted(quote, confirmedCents);
  return payThenRecord(deps, accountId, {
    amount_cents: quote.amount_cents,
    description: `Upgrade from ${state.tier} to ${tier}, ${quote.days} of ${quote.days_in_month} days`,
    idempotency_key: `upgrade:${tier}:${state.last_hash}`,
    purchase: { kind: 'upgrade', tier, amount_cents: quote.amount_cents },
  });
}

/** A cheaper plan from the end of the month. */
export function downgradePlan(deps: BillingDeps, accountId: string, tier: Tier): Promise<LedgerOutcome> {
  return deps.ledger.execute(accountId, { type: 'DowngradePlan', data: { tier } });
}

/** Starts the Pro membership at once; `confirmedCents` is the prorated amount shown. */
export async function startPro(deps: BillingDeps, accountId: string, confirmedCents: number): Promise<Purchased> {
  const now = deps.clock.now();
  const state = stateAt(await deps.ledger.state(accountId), now);
  const quote = quotePro(state, now);
  requireQuoted(quote, confirmedCents);
  return payThenRecord(deps, accountId, {
    amount_cents: quote.amount_cents,
    description: `Pro membership, ${quote.days} of ${quote.days_in_month} days`,
    idempotency_key: `pro:${state.last_hash}`,
    purchase: { kind: 'pro', amount_cents: quote.amount_cents },
  });
}

/** Ends the Pro membership at once (what was paid for this month is not given back). */
export function endPro(deps: BillingDeps, accountId: string): Promise<LedgerOutcome> {
  return deps.ledger.execute(accountId, { type: 'SetPro', data: { on: false } });
}

/**
 * Buys one of the packs on sale. `purchaseId` is the purchase's reference (a nonce in the form):
 * the same form sent twice buys once, as the ledger credits a reference once.
 */
export async function buyPack(deps: BillingDeps, accountId: string, packId: string, purchaseId: string): Promise<Purchased> {
  const pack = packOnSale(packId);
  if (!/^[A-Za-z0-9_-]{8,64}$/.test(purchaseId)) throw badRequest('The purchase reference is malformed');
  return payThenRecord(deps, accountId, {
    amount_cents: packPriceCents(pack),
    description: `Credit pack, ${pack.credits} credits`,
    idempotency_key: `pack:${pack.id}:${purchaseId}`,
    purchase: { kind: 'pack', pack: pack.id, purchase_id: purchaseId },
  });
}

function packOnSale(packId: string): CreditPack {
  const pack = CREDIT_PACKS.find((p) => p.id === packId);
  if (!pack) throw badRequest(`No pack ${packId} is on sale`, { pack: packId });
  return pack;
}

const packPriceCents = (pack: CreditPack) => Math.round(pack.price_usd * 100);
