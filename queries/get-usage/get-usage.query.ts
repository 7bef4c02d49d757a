import type { MeteredCall } from '../shared/query-context.js';
import { rateCardForUsage, type RateUnit } from '../../src/domain/rate-card.js';
import type { Coverage, Tier } from '../../src/domain/plans.js';

export interface EntitlementsResponse {
  /**
   * Monthly credits; null = unmetered.
   * @isLong
   */
  credits: number | null;
  /**
   * How many days the data you see trails today.
   * @isInt
   */
  delay_days: number;
  /** The universe you see: `all`, or `top100` on the free tier. */
  coverage: Coverage;
  /**
   * Days of history you can reach; null = the full history.
   * @isInt
   */
  history_days: number | null;
}

export interface RateResponse {
  /** @isLong */
  credits: number;
  /** `call`, `row` or `constituent`. */
  unit: RateUnit;
  /** Method and path. */
  endpoint: string;
}

/** The rate card by rate-card key (`x-rate-card` of each operation in the OpenAPI document). */
export interface RateCardResponse {
  [rateKey: string]: RateResponse;
}

export interface UsageResponse {
  tier: Tier;
  /** Whether the Pro-member overlay is active. */
  pro_member: boolean;
  /**
   * Included credits; null means enterprise, unmetered.
   * @isLong
   */
  monthly_allowance: number | null;
  /**
   * Credits used this calendar month (allowance draws plus overage).
   * @isLong
   */
  used_this_month: number;
  /**
   * Allowance minus used; negative only in overage; null when unmetered.
   * @isLong
   */
  credits_remaining: number | null;
  /** @isLong */
  overage_credits: number;
  /** Accrued overage in dollars. */
  overage_cost_usd: number;
  /**
   * Banked pack credits; consumed after the allowance.
   * @isLong
   */
  prepaid_credits: number;
  /** Switch between hard stop (false) and overage (true). */
  allow_overage: boolean;
  /** Overage price per 1,000 credits; null on tiers without overage (free: hard stop only; enterprise: unmetered). */
  overage_per_1k_usd: number | null;
  /**
   * ISO 8601 UTC instant when the allowance resets (the next month boundary).
   * @format date-time
   */
  resets_at: string;
  entitlements: EntitlementsResponse;
  /** Live credit cost of every endpoint, from the same table the metering charges by. */
  rate_card: RateCardResponse;
}

export async function run(call: MeteredCall): Promise<UsageResponse> {
  await call.charge('usage');
  const f = await call.ctx.meter.usage(call.principal);
  return {
    tier: f.tier,
    pro_member: f.pro_member,
    monthly_allowance: f.monthly_allowance,
    used_this_month: f.used_this_month,
    credits_remaining: f.credits_remaining,
    overage_credits: f.overage_credits,
    overage_cost_usd: f.overage_cost_usd,
    prepaid_credits: f.prepaid_credits,
    allow_overage: f.allow_overage,
    overage_per_1k_usd: f.overage_per_1k_usd,
    resets_at: f.resets_at,
    entitlements: { ...f.entitlements },
    rate_card: rateCardForUsage(),
  };
}
