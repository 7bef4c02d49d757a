/**
 * What a self-serve purchase costs now, quoted on the ledger's state: the page shows the quote,
 * billing charges it and the ledger's decider checks the confirmed amount against it again.
 */
import { AppError, badRequest } from '../../core/errors.js';
import { proAddsTo, type Tier } from '../plans.js';
import type { LedgerState } from './ledger.state.js';
import { PRO_MONTHLY_PRICE_CENTS, formatUsd, monthlyPriceCents, prorate, type Proration } from './proration.js';

/** What an upgrade to `tier` costs now; refused (400) when it is not an upgrade a user may buy. */
export function quoteUpgrade(s: LedgerState, tier: Tier, now: Date): Proration {
  const from = monthlyPriceCents(s.tier);
  const to = monthlyPriceCents(tier);
  if (from === null || to === null) throw badRequest(`The ${from === null ? s.tier : tier} plan is not sold self-serve`);
  if (to <= from) throw badRequest(`${tier} is not an upgrade from ${s.tier}: a cheaper plan starts at the end of the month`);
  return prorate(to - from, now);
}

/**
 * What the Pro membership costs now, for the rest of the month; refused (409) for a member, and
 * (400) on a plan it adds nothing to, which would pay for nothing (proAddsTo).
 */
export function quotePro(s: LedgerState, now: Date): Proration {
  if (s.pro) throw new AppError('conflict', 'This account is already a Pro member');
  if (!proAddsTo(s.tier)) throw badRequest(`The Pro membership adds nothing to the ${s.tier} plan, which has as much of everything it gives or more`);
  return prorate(PRO_MONTHLY_PRICE_CENTS, now);
}

/** The confirmed amount must still be what is due: a quote seen yesterday is no longer today's (409, naming both). */
export function requireQuoted(quoted: Proration, confirmed: number): void {
  if (quoted.amount_cents === confirmed) return;
  const was = Number.isSafeInteger(confirmed) ? `, not ${formatUsd(confirmed)}` : '';
  throw new AppError('conflict', `The prorated amount is now ${formatUsd(quoted.amount_cents)}${was}: review it and confirm again`, { amount_cents: quoted.amount_cents });
}
