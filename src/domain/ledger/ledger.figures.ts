/** The numbers a caller reads off a ledger state: `/v1/usage`, `X-Credits-Remaining`, the 429 body. */
import { PLANS, entitlementsOf, type Entitlements, type Tier } from '../plans.js';
import { nextPeriodStart, periodOf } from './billing-period.js';
import type { LedgerState } from './ledger.state.js';
import { advanceTo, recorder, somethingDue } from './ledger.recorder.js';

/** The state as it stands at `now`: a due cancellation applied, a new month opened. No events kept. */
export function stateAt(state: LedgerState, now: Date): LedgerState {
  // Every metered call asks twice (tier for gating, X-Credits-Remaining): skip the recorder then.
  if (!somethingDue(state, now)) return state;
  const rec = recorder(state, now.toISOString());
  advanceTo(rec, now);
  return rec.state;
}

/** allowance − used_this_month; negative only in overage; null when unmetered. */
export function creditsRemainingNumber(s: LedgerState): number | null {
  return s.allowance === null ? null : s.allowance - s.used_allowance - s.overage_credits;
}

/**
 * The balance `/v1/usage` answers with, declared once with the words and formats the API document
 * gives each figure (tsoa reads them here); the account page and the usage read model read it too.
 */
export interface UsageBalance {
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
}

/** The balance, with what the service itself reads off it. */
export interface UsageFigures extends UsageBalance {
  entitlements: Entitlements;
  /** `YYYY-MM` of the month shown. */
  period: string;
  /** When a scheduled cancellation takes the account to free; null when none is pending. */
  plan_ends_at: string | null;
}

/** The account's numbers as of `now` (a later month shows fresh usage without an event). */
export function usageFigures(state: LedgerState, now: Date): UsageFigures {
  const s = stateAt(state, now);
  const used = s.used_allowance + s.overage_credits;
  return {
    tier: s.tier,
    pro_member: s.pro,
    monthly_allowance: s.allowance,
    used_this_month: used,
    credits_remaining: creditsRemainingNumber(s),
    overage_credits: s.overage_credits,
    overage_cost_usd: Math.round(s.overage_micro_usd / 10_000) / 100,
    overage_per_1k_usd: PLANS[s.tier].overage_per_1k_usd,
    prepaid_credits: s.prepaid,
    allow_overage: s.allow_overage,
    resets_at: s.resets_at ?? nextPeriodStart(now),
    entitlements: entitlementsOf(s.tier, s.pro),
    period: s.period ?? periodOf(now),
    plan_ends_at: s.cancellation_effective_at,
  };
}

/**
 * `X-Credits-Remaining`: credits_remaining + prepaid_credits, or `unlimited` when unmetered.
 * Pass `now` to see a month that has begun but has no event yet.
 */
export function creditsRemainingHeader(state: LedgerState, now?: Date): string {
  const s = now ? stateAt(state, now) : state;
  // Before any period is open, `allowance` null means "not granted yet", not "unmetered".
  const remaining = s.period === null ? entitlementsOf(s.tier, s.pro).credits : creditsRemainingNumber(s);
  return remaining === null ? 'unlimited' : String(remaining + s.prepaid);
}
