/**
 * The state of one account's credit ledger and how each event changes it (`evolve`), plus what
 * falls due by a clock alone (a new month, a cancellation taking effect). The write side decides
 * on this state (commands/ledger) and the usage read models fold it (projections/usage): one
 * copy of the metering arithmetic for both.
 */
import { PLANS, entitlementsOf, moreOf, overageAllowed, type Tier } from '../plans.js';
import { GENESIS_HASH, sealEvent, type CarriedLedgerState, type LedgerEvent, type LedgerEventBody, type LedgerEventType } from './ledger.events.js';
import { nextPeriodStart, periodOf } from './billing-period.js';

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
    case 'CreditsDebited': {
      const d = event.data;
      return withChanges(state, {
        last_hash,
        used_allowance: state.used_allowance + d.from_allowance,
        prepaid: state.prepaid - d.from_prepaid,
        overage_credits: state.overage_credits + d.from_overage,
        overage_micro_usd: state.overage_micro_usd + d.from_overage * microUsdPerCredit(state.tier),
      });
    }
    case 'CreditsDebitedBatch': {
      // The sums of its calls, as folding them one by one would give (whole numbers: exact).
      const c = event.data.calls;
      let allowance = 0;
      let prepaid = 0;
      let overage = 0;
      for (let i = 0; i < c.cost.length; i++) {
        allowance += c.from_allowance[i]!;
        prepaid += c.from_prepaid[i]!;
        overage += c.from_overage[i]!;
      }
      return withChanges(state, {
        last_hash,
        used_allowance: state.used_allowance + allowance,
        prepaid: state.prepaid - prepaid,
        overage_credits: state.overage_credits + overage,
        overage_micro_usd: state.overage_micro_usd + overage * microUsdPerCredit(state.tier),
      });
    }
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

// ---------------------------------------------------------------------------------------------
// decide

/** Collects the events of one decision, chaining their hashes and folding them as it goes. */
export function recorder(start: LedgerState, at: string) {
  let state = start;
  const events: LedgerEvent[] = [];
  return {
    get state() {
      return state;
    },
    /** The decision's instant (what `at` records). */
    get now() {
      return new Date(at);
    },
    events,
    emit<T extends LedgerEventType>(type: T, body: LedgerEventBody<T>): void {
      const e = sealEvent(type, body, at, state.last_hash) as LedgerEvent;
      events.push(e);
      state = evolve(state, e);
    },
  };
}
export type Recorder = ReturnType<typeof recorder>;

/** Whether `advanceTo` has anything to record at `now` (the common answer is no). */
export function somethingDue(s: LedgerState, now: Date): boolean {
  return (
    s.period === null ||
    periodOf(now) > s.period ||
    (s.cancellation_effective_at !== null && Date.parse(s.cancellation_effective_at) <= now.getTime())
  );
}

/** What falls due by `now` before any command: a cancellation taking effect, a new month. */
export function advanceTo(rec: Recorder, now: Date): void {
  if (!somethingDue(rec.state, now)) return;
  const period = periodOf(now);
  // Each finished month is closed with the state it ends in, and the next one opened, up to
  // now's: a month without a single call is still a month of the plan, closed (and invoiced)
  // like any other. What a cancellation or a new month change belongs to the new month.
  while (rec.state.period !== null && period > rec.state.period) {
    const next = new Date(nextPeriodStart(new Date(`${rec.state.period}-01T00:00:00Z`)));
    rec.emit('LedgerPeriodClosed', { period: rec.state.period, carried: carriedOf(rec.state) });
    applyDueChange(rec, next);
    rec.emit('AllowancePeriodOpened', { period: periodOf(next), allowance: entitlementsOf(rec.state.tier, rec.state.pro).credits, resets_at: nextPeriodStart(next) });
  }
  applyDueChange(rec, now);
  if (rec.state.period === null) {
    rec.emit('AllowancePeriodOpened', { period, allowance: entitlementsOf(rec.state.tier, rec.state.pro).credits, resets_at: nextPeriodStart(now) });
  }
}

/** A scheduled cancellation or downgrade due by `at`. */
function applyDueChange(rec: Recorder, at: Date): void {
  const due = rec.state.cancellation_effective_at;
  if (due === null || Date.parse(due) > at.getTime()) return;
  const tier = rec.state.scheduled_tier ?? 'free';
  rec.emit('PlanChanged', { tier, reason: rec.state.scheduled_tier ? 'downgraded_at_period_end' : 'cancelled_at_period_end' });
  if (rec.state.allow_overage && !overageAllowed(tier)) rec.emit('OverageSwitched', { allow_overage: false });
}

/** Everything of the state but `last_hash`: what a month's closing event carries into the next. */
export function carriedOf(s: LedgerState): CarriedLedgerState {
  const { last_hash: _chained, ...carried } = s;
  return { ...carried, packs: { ...s.packs }, alerts: [...s.alerts] };
}
