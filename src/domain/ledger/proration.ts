/**
 * Proration to the day (docs/billing.md): a change that costs more takes effect at once and is
 * charged, at once, the monthly price difference for the days left in the month, today included.
 * A change that costs less takes effect at the month's end, so it is never prorated.
 */
import { PLANS, PRO_MONTHLY_PRICE_USD, type Tier } from '../plans.js';

export interface Proration {
  /** Days left in the month, today included. */
  days: number;
  days_in_month: number;
  /** Monthly price difference, cents. */
  monthly_difference_cents: number;
  /** What is charged now: the difference × days / days_in_month, rounded to the cent. */
  amount_cents: number;
}

const cents = (usd: number): number => Math.round(usd * 100);

/** Days of `now`'s month (UTC). */
export function daysInMonth(now: Date): number {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate();
}

/** The charge of raising a monthly price by `differenceCents` at `now`. */
export function prorate(differenceCents: number, now: Date): Proration {
  const total = daysInMonth(now);
  const days = total - now.getUTCDate() + 1;
  return { days, days_in_month: total, monthly_difference_cents: differenceCents, amount_cents: Math.round((differenceCents * days) / total) };
}

/** A tier's monthly price in cents (a tier not sold self-serve has none). */
export function monthlyPriceCents(tier: Tier): number | null {
  const usd = PLANS[tier].monthly_price_usd;
  return usd === null ? null : cents(usd);
}

export const PRO_MONTHLY_PRICE_CENTS = cents(PRO_MONTHLY_PRICE_USD);

/** `1234` → `$12.34` (negative amounts as `-$12.34`). */
export function formatUsd(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}
