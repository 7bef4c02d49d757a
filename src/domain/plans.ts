/**
 * Plan tiers and the Pro-member overlay: THE one table of what each tier includes.
 * Metering, `/v1/usage`, gating, OpenAPI text and docs all read these numbers from here
 * (docs/product.md, "Plans").
 */

/** Lowest to highest; the position is the tier's rank for gating. */
export const TIERS = ['free', 'hobbyist', 'builder', 'quant', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export type Coverage = 'all' | 'top100';

export interface TierPlan {
  tier: Tier;
  /** Position in TIERS; higher includes everything lower tiers may call. */
  rank: number;
  /** Included credits per calendar month (UTC); null = unmetered (enterprise). */
  monthly_allowance: number | null;
  /** How many days the data trails the current date. */
  delay_days: number;
  coverage: Coverage;
  /** Depth of history visible; null = full history. */
  history_days: number | null;
  /** Overage price per 1,000 credits; null when the tier cannot run into overage. */
  overage_per_1k_usd: number | null;
  /** Subscription price per calendar month, USD; null = not sold self-serve (enterprise: by contract). */
  monthly_price_usd: number | null;
  /** Requests per second per account (all its keys, REST and MCP together), with a burst of RATE_BURST_FACTOR times that. */
  rate_per_second: number;
}

type PlanRow = Omit<TierPlan, 'tier' | 'rank'>;

const ROWS: Record<Tier, PlanRow> = {
  free: { monthly_allowance: 1_000, delay_days: 7, coverage: 'top100', history_days: 90, overage_per_1k_usd: null, monthly_price_usd: 0, rate_per_second: 10 },
  hobbyist: { monthly_allowance: 25_000, delay_days: 0, coverage: 'all', history_days: 730, overage_per_1k_usd: 0.5, monthly_price_usd: 19, rate_per_second: 20 },
  builder: { monthly_allowance: 250_000, delay_days: 0, coverage: 'all', history_days: 1_825, overage_per_1k_usd: 0.4, monthly_price_usd: 99, rate_per_second: 50 },
  quant: { monthly_allowance: 2_500_000, delay_days: 0, coverage: 'all', history_days: null, overage_per_1k_usd: 0.25, monthly_price_usd: 499, rate_per_second: 100 },
  enterprise: { monthly_allowance: null, delay_days: 0, coverage: 'all', history_days: null, overage_per_1k_usd: null, monthly_price_usd: null, rate_per_second: 500 },
};

export const PLANS: Readonly<Record<Tier, Readonly<TierPlan>>> = Object.freeze(
  Object.fromEntries(TIERS.map((tier, rank) => [tier, Object.freeze({ tier, rank, ...ROWS[tier] })])) as Record<Tier, TierPlan>,
);

/** What a key may see and spend, after the Pro overlay. The shape `/v1/usage` shows as `entitlements`. */
export interface Entitlements {
  /** Monthly credits; null = unmetered. */
  credits: number | null;
  delay_days: number;
  coverage: Coverage;
  /** null = full history. */
  history_days: number | null;
}

/**
 * The consumer Pro membership's overlay: live data, full universe, one year of history and
 * 5,000 credits a month. Deeper history, webhooks and bulk exports stay with the developer plans,
 * so the overlay never changes the tier (gating), only these entitlements.
 */
export const PRO_OVERLAY: Readonly<Entitlements> = Object.freeze({
  credits: 5_000,
  delay_days: 0,
  coverage: 'all',
  history_days: 365,
});

/** The Pro membership's price per calendar month, USD (the consumer membership, on the same account). */
export const PRO_MONTHLY_PRICE_USD = 9;

/** Prepaid credit packs sold on the account page (the operator's CLI may add any size, unpriced). */
export interface CreditPack {
  id: string;
  credits: number;
  price_usd: number;
}
export const CREDIT_PACKS: readonly Readonly<CreditPack>[] = Object.freeze([
  Object.freeze({ id: 'pack-10k', credits: 10_000, price_usd: 5 }),
  Object.freeze({ id: 'pack-100k', credits: 100_000, price_usd: 40 }),
  Object.freeze({ id: 'pack-1m', credits: 1_000_000, price_usd: 300 }),
]);

/** An account's token bucket holds this many seconds of its rate: the burst its keys may send at once. */
export const RATE_BURST_FACTOR = 2;
/** Requests per second per client address without a valid key (401s cost work too). */
export const ANONYMOUS_RATE_PER_SECOND = 10;

/** Whether a user may choose the tier on the account page (enterprise is sold by contract). */
export function selfServe(tier: Tier): boolean {
  return PLANS[tier].monthly_price_usd !== null;
}

/** Usage alerts fire once per month at these percentages of the allowance. */
export const USAGE_ALERT_THRESHOLDS = [75, 90, 100] as const;
export type UsageAlertThreshold = (typeof USAGE_ALERT_THRESHOLDS)[number];

/** The larger of two allowances or depths, where null (unlimited) beats any number. */
export function moreOf(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : Math.max(a, b);
}

const wider = (a: Coverage, b: Coverage): Coverage => (a === 'all' || b === 'all' ? 'all' : 'top100');

/** The tier's entitlements, each improved by the Pro overlay when the account is a Pro member. */
export function entitlementsOf(tier: Tier, pro: boolean): Entitlements {
  const p = PLANS[tier];
  const own: Entitlements = {
    credits: p.monthly_allowance,
    delay_days: p.delay_days,
    coverage: p.coverage,
    history_days: p.history_days,
  };
  if (!pro) return own;
  return {
    credits: moreOf(own.credits, PRO_OVERLAY.credits),
    delay_days: Math.min(own.delay_days, PRO_OVERLAY.delay_days),
    coverage: wider(own.coverage, PRO_OVERLAY.coverage),
    history_days: moreOf(own.history_days, PRO_OVERLAY.history_days),
  };
}

/** True when `tier` is `min` or higher. */
export function tierAtLeast(tier: Tier, min: Tier): boolean {
  return PLANS[tier].rank >= PLANS[min].rank;
}

/** A tier as people read it: `hobbyist` → `Hobbyist` (pages, invoices). */
export function tierName(tier: Tier): string {
  return `${tier.charAt(0).toUpperCase()}${tier.slice(1)}`;
}

export function isTier(x: unknown): x is Tier {
  return typeof x === 'string' && (TIERS as readonly string[]).includes(x);
}

/**
 * Whether the tier may switch overage on. Free is hard-stop only; enterprise is unmetered, so
 * there is nothing to overrun.
 */
export function overageAllowed(tier: Tier): boolean {
  return PLANS[tier].overage_per_1k_usd !== null;
}

/**
 * Whether the Pro membership adds anything to `tier`: the account page offers it only then, and
 * a purchase of it is refused otherwise (plan-quotes.ts). Decided from the one plan table, field
 * by field (credits, delay, coverage, history): on free it adds live data, the full universe, a
 * year of history and more credits; every paid plan already has as much or more of each, so there
 * it would charge for nothing.
 */
export function proAddsTo(tier: Tier): boolean {
  const own = entitlementsOf(tier, false);
  const withPro = entitlementsOf(tier, true);
  return (Object.keys(own) as (keyof Entitlements)[]).some((k) => own[k] !== withPro[k]);
}
