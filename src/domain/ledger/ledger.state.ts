/**
 * The state of one account's credit ledger and how each event changes it (`evolve`).
 * The write side decides on this state (commands/ledger) and the usage read models fold it
 * (projections/usage): one copy of the metering arithmetic for both. What falls due by a clock
 * alone is in ledger.recorder.ts.
 */
import { PLANS, entitlementsOf, moreOf, type Tier } from '../plans.js';
import { GENESIS_HASH, type CarriedLedgerState, type CreditsDebited, type DebitColumns, type LedgerEvent } from './ledger.events.js';

// ---------------------------------------------------------------------------------------------
// State

/** The ledger's state: what a month's closing event carries (its fields are documented there), and the chain's last hash. */
export interface LedgerState extends CarriedLedgerState {
  /** Hash of the last event, the next event's `prev_hash`. */
  last_hash: string;
}

export const initialLedgerState: LedgerState = Object.freeze({
  opened: false,
  account_id: null,
  tier: 'free',
  pro: false,
  allow_overage: false,
  prepaid: 0,
  packs: Object.freeze({}),
  period: null,
  allowance: null,
  resets_at: null,
  used_allowance: 0,
  overage_credits: 0,
  overage_micro_usd: 0,
  alerts: [],
  cancellation_effective_at: null,
  scheduled_tier: null,
  last_payment_ref: null,
  last_hash: GENESIS_HASH,
});

// ---------------------------------------------------------------------------------------------
// evolve

const microUsdPerCredit = (tier: Tier): number => {
  const rate = PLANS[tier].overage_per_1k_usd;
  // usd per credit = rate / 1000, so millionths of a dollar per credit = rate * 1000.
  return rate === null ? 0 : Math.round(rate * 1000);
};

/** A raise applies to the current period at once; a lowering waits for the next period. */
const raisedAllowance = (s: LedgerState, tier: Tier, pro: boolean): number | null =>
  s.period === null ? s.allowance : moreOf(s.allowance, entitlementsOf(tier, pro).credits);

/**
 * A copy of the state with `changes` applied. Not `{ ...state, ...changes }`: in V8 11 (node 20)
 * a spread followed by more properties gives every copy a hidden class of its own, about 10x
 * slower than this, and `evolve` runs for every event, on every metered call. The literal lists
 * every field, so the compiler says when one is added and not copied.
 */
function withChanges(s: LedgerState, changes: Partial<LedgerState>): LedgerState {
  const copy: LedgerState = {
    opened: s.opened,
    account_id: s.account_id,
    tier: s.tier,
    pro: s.pro,
    allow_overage: s.allow_overage,
    prepaid: s.prepaid,
    packs: s.packs,
    period: s.period,
    allowance: s.allowance,
    resets_at: s.resets_at,
    used_allowance: s.used_allowance,
    overage_credits: s.overage_credits,
    overage_micro_usd: s.overage_micro_usd,
    alerts: s.alerts,
    cancellation_effective_at: s.cancellation_effective_at,
    scheduled_tier: s.scheduled_tier ?? null,
    last_payment_ref: s.last_payment_ref ?? null,
    last_hash: s.last_hash,
  };
  return Object.assign(copy, changes);
}

/** What one debit, or a batch's sums, draws from each source. */
type Draw = Pick<CreditsDebited['data'], 'from_allowance' | 'from_prepaid' | 'from_overage'>;

function debited(s: LedgerState, last_hash: string, d: Draw): LedgerState {
  return withChanges(s, {
    last_hash,
    used_allowance: s.used_allowance + d.from_allowance,
    prepaid: s.prepaid - d.from_prepaid,
    overage_credits: s.overage_credits + d.from_overage,
    overage_micro_usd: s.overage_micro_usd + d.from_overage * microUsdPerCredit(s.tier),
  });
}

/** The sums of a batch's calls, as folding them one by one would give (whole numbers: exact). */
function batchSums(c: DebitColumns): Draw {
  const sums = { from_allowance: 0, from_prepaid: 0, from_overage: 0 };
  for (let i = 0; i < c.cost.length; i++) {
    sums.from_allowance += c.from_allowance[i]!;
    sums.from_prepaid += c.from_prepaid[i]!;
    sums.from_overage += c.from_overage[i]!;
  }
  return sums;
}

/** Never rejects an event: an event is a fact. Each case copies the state once (hot path). */
export function evolve(state: LedgerState, event: LedgerEvent): LedgerState {
  const last_hash = event.data.hash;
  switch (event.type) {
    case 'LedgerOpened': {
      const d = event.data;
      return withChanges(state, { last_hash, opened: true, account_id: d.account_id, tier: d.tier, pro: d.pro, allow_overage: d.allow_overage });
    }
    case 'LedgerPeriodClosed':
      return withChanges(state, { ...event.data.carried, last_hash });
    case 'AllowancePeriodOpened': {
      const d = event.data;
      return withChanges(state, {
        last_hash,
        period: d.period,
        allowance: d.allowance,
        resets_at: d.resets_at,
        used_allowance: 0,
        overage_credits: 0,
        overage_micro_usd: 0,
        alerts: [],
      });
    }
    case 'CreditsDebited':
      return debited(state, last_hash, event.data);
    case 'CreditsDebitedBatch':
      return debited(state, last_hash, batchSums(event.data.calls));
    case 'PackPurchased':
      return withChanges(state, {
        last_hash,
        prepaid: state.prepaid + event.data.credits,
        // A spread (not Object.assign): a reference named "__proto__" stays an own key.
        packs: { ...state.packs, [event.data.pack_id]: event.data.credits },
      });
    case 'OverageSwitched':
      return withChanges(state, { last_hash, allow_overage: event.data.allow_overage });
    case 'PlanChanged':
      return withChanges(state, {
        last_hash,
        tier: event.data.tier,
        cancellation_effective_at: null,
        scheduled_tier: null,
        allowance: raisedAllowance(state, event.data.tier, state.pro),
      });
    case 'PlanCancellationScheduled':
      return withChanges(state, { last_hash, cancellation_effective_at: event.data.effective_at, scheduled_tier: null });
    case 'PlanDowngradeScheduled':
      return withChanges(state, { last_hash, cancellation_effective_at: event.data.effective_at, scheduled_tier: event.data.tier });
    case 'ProrationCharged':
      // A payment: the plan or membership it pays for changed in the same decision.
      return withChanges(state, { last_hash, last_payment_ref: event.data.payment_ref });
    case 'ProMembershipChanged':
      return withChanges(state, { last_hash, pro: event.data.pro, allowance: raisedAllowance(state, state.tier, event.data.pro) });
    case 'UsageAlertRaised':
      return withChanges(state, {
        last_hash,
        alerts: event.data.period === state.period && !state.alerts.includes(event.data.threshold) ? [...state.alerts, event.data.threshold] : state.alerts,
      });
    default: {
      const _exhaustive: never = event;
      return state;
    }
  }
}

/** Folds a stream's events (read from the store) into the state. */
export function foldLedger(events: ReadonlyArray<{ type: string; data: unknown }>, from: LedgerState = initialLedgerState): LedgerState {
  return events.reduce((s, e) => evolve(s, e as LedgerEvent), from);
}

/** Everything of the state but `last_hash`: what a month's closing event carries into the next. */
export function carriedOf(s: LedgerState): CarriedLedgerState {
  const { last_hash: _chained, ...carried } = s;
  return { ...carried, packs: { ...s.packs }, alerts: [...s.alerts] };
}
