/**
 * What an account that runs out of credits can do about it, in words: the 429 `credits_exhausted`
 * refusal and the usage-alert emails offer the same ways out, each only where the account's tier
 * allows it (`plans.ts`): packs on every tier, overage on the metered paid tiers, a self-serve
 * upgrade to the next dearer plan, the Pro membership where its credits exceed the plan's.
 */
import { CREDIT_PACKS, PLANS, PRO_MONTHLY_PRICE_USD, PRO_OVERLAY, TIERS, moreOf, overageAllowed, selfServe, type Tier } from './plans.js';

/** `2,500`: a count as the messages write it. */
export const count = (n: number) => n.toLocaleString('en-US');
/** `$9.00`. */
export const usd = (n: number) => `$${n.toFixed(2)}`;

/** `1 prepaid credit`, `2,500 prepaid credits`. */
export function plural(n: number, word: string): string {
  return `${count(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** `1 credit`, `0 credits`, `2,500 credits`. */
export function credits(n: number): string {
  return plural(n, 'credit');
}

/** `1 credit is left`, `0 credits are left`. */
export function creditsLeft(n: number): string {
  return `${credits(n)} ${n === 1 ? 'is' : 'are'} left`;
}

/** `a`, `a or b`, `a, b or c`. */
export function joinOr(options: readonly string[]): string {
  return options.length <= 1 ? (options[0] ?? '') : `${options.slice(0, -1).join(', ')} or ${options[options.length - 1]}`;
}

/** The cheapest self-serve plan dearer than `tier`, if any (enterprise is sold by contract). */
function nextSelfServeTier(tier: Tier): Tier | null {
  const price = PLANS[tier].monthly_price_usd;
  if (price === null) return null;
  return TIERS.find((t) => selfServe(t) && PLANS[t].monthly_price_usd! > price) ?? null;
}

export interface CreditAccount {
  tier: Tier;
  pro: boolean;
  allow_overage: boolean;
  /** This month's allowance; null = unmetered. It can exceed the plan's after a downgrade (a lowering waits for the next month). */
  allowance: number | null;
}

/**
 * The ways to more credits this month open to `a`, as phrases to join with `joinOr`: a credit
 * pack; overage, when the tier has it and it is off; the next self-serve plan and the Pro
 * membership, each when it raises this month's allowance (a raise applies at once), which the
 * membership does on free only.
 */
export function creditOptions(a: CreditAccount): string[] {
  const smallest = CREDIT_PACKS.reduce((p, q) => (q.credits < p.credits ? q : p));
  const options = [`buy a credit pack (from ${credits(smallest.credits)} for ${usd(smallest.price_usd)}; prepaid credits carry over from month to month)`];
  const rate = PLANS[a.tier].overage_per_1k_usd;
  if (overageAllowed(a.tier) && rate !== null && !a.allow_overage) options.push(`turn overage on (billed at ${usd(rate)} per 1,000 credits)`);
  const raises = (monthly: number | null) => a.allowance !== null && moreOf(a.allowance, monthly) !== a.allowance;
  const next = nextSelfServeTier(a.tier);
  if (next && raises(PLANS[next].monthly_allowance)) options.push(`upgrade to ${next} (${credits(PLANS[next].monthly_allowance!)} a month)`);
  if (!a.pro && raises(PRO_OVERLAY.credits)) {
    options.push(`start the Pro membership (${credits(PRO_OVERLAY.credits!)} a month for ${usd(PRO_MONTHLY_PRICE_USD)} a month)`);
  }
  return options;
}
