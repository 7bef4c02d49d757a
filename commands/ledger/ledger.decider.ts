/**
 * The credit ledger of one developer account: pure `decide` / `evolve` over `ledger-<account_id>`.
 *
 * This is where "may this call spend N credits?" is answered, strongly consistent on the write
 * side (DESIGN §1): the handler reads the stream, folds `evolve`, calls `decide` and appends with
 * the expected revision, retrying on a concurrency conflict.
 *
 * Rules (spec "States and transitions", "Limits"; DESIGN §5):
 * - A period is a calendar month (UTC). Before any command, when `now` is in a later month than
 *   the state's period, `decide` first records the new period (after applying a cancellation that
 *   has taken effect). The state is never "rolled" by a clock alone: `usageFigures` shows the
 *   fresh month for such a `now` without an event.
 * - Draw order: allowance, then prepaid, then overage (only with `allow_overage`). Otherwise a
 *   debit that does not fit is refused whole (429 `credits_exhausted`): no events, no partial charge.
 * - A raise of the allowance (upgrade, Pro membership) applies at once to the current period, so an
 *   upgrade lifts a hard stop immediately. A lowering (downgrade, Pro ended) applies from the next
 *   period: credits already granted this month are not taken back, which also keeps
 *   `credits_remaining` from going negative outside overage.
 * - A pack's purchase reference (`pack_id`) is an idempotency key: the same purchase again changes
 *   nothing; another purchase under a used reference is refused (409 `conflict`).
 * - A command that changes nothing yields no events at all, not even the period roll.
 */
import { AppError, badRequest } from '../../src/core/errors.js';
import {
  PLANS,
  USAGE_ALERT_THRESHOLDS,
  entitlementsOf,
  isTier,
  moreOf,
  overageAllowed,
  type Entitlements,
  type Tier,
  type UsageAlertThreshold,
} from '../../src/domain/plans.js';
import { isRateKey, type RateKey } from '../../src/domain/rate-card.js';
import { GENESIS_HASH, sealEvent, type Channel, type LedgerEvent, type LedgerEventBody, type LedgerEventType } from '../../src/events/ledger.events.js';

// ---------------------------------------------------------------------------------------------
// Commands

export type OpenLedger = { type: 'OpenLedger'; data: { account_id: string; tier: Tier; pro: boolean } };
/** `cost` comes from the rate card (`costOf`) once the call's rows are counted. */
export type DebitCredits = {
  type: 'DebitCredits';
  data: { request_id: string; endpoint: RateKey; channel: Channel; cost: number };
};
export type PurchasePack = { type: 'PurchasePack'; data: { pack_id: string; credits: number } };
export type SwitchOverage = { type: 'SwitchOverage'; data: { on: boolean } };
export type SetPlan = { type: 'SetPlan'; data: { tier: Tier } };
/** Falls back to free at the end of the current period; the key keeps working. */
export type CancelPlan = { type: 'CancelPlan'; data?: Record<string, never> };
export type SetPro = { type: 'SetPro'; data: { on: boolean } };

export type LedgerCommand = OpenLedger | DebitCredits | PurchasePack | SwitchOverage | SetPlan | CancelPlan | SetPro;

// ---------------------------------------------------------------------------------------------
// State

export interface LedgerState {
  opened: boolean;
  account_id: string | null;
  tier: Tier;
  pro: boolean;
  allow_overage: boolean;
  /** Banked pack credits; they carry over month to month. */
  prepaid: number;
  /**
   * The credits of every pack bought, by purchase reference: the reference is the purchase's
   * idempotency key, so a retried purchase is credited once (`decide` checks it here, where the
   * append's expected revision makes the check race-free).
   */
  packs: Readonly<Record<string, number>>;
  /** Current period `YYYY-MM`, null before the first one opens. */
  period: string | null;
  /** The current period's allowance; null = unmetered. */
  allowance: number | null;
  resets_at: string | null;
  /** Credits drawn from this period's allowance. */
  used_allowance: number;
  /** Credits charged as overage this period. */
  overage_credits: number;
  /** Accrued overage in millionths of a dollar, each debit at the rate of the tier it ran under. */
  overage_micro_usd: number;
  /** Alert thresholds already raised this period. */
  alerts: readonly UsageAlertThreshold[];
  /** When a scheduled cancellation takes the account to free; null when none is pending. */
  cancellation_effective_at: string | null;
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
  last_hash: GENESIS_HASH,
});

// ---------------------------------------------------------------------------------------------
// Calendar

/** The month `periodOf` answered last, as [start, end) in ms: every call in a month asks for it. */
let lastMonth = { start: 0, end: 0, period: '' };

/** `YYYY-MM` of an instant, in UTC. */
export function periodOf(now: Date): string {
  const t = now.getTime();
  if (t >= lastMonth.start && t < lastMonth.end) return lastMonth.period;
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  lastMonth = { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1), period: now.toISOString().slice(0, 7) };
  return lastMonth.period;
}

/** 00:00Z on the 1st of the month after `now`'s month. */
export function nextPeriodStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}

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
        allowance: raisedAllowance(state, event.data.tier, state.pro),
      });
    case 'PlanCancellationScheduled':
      return withChanges(state, { last_hash, cancellation_effective_at: event.data.effective_at });
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
function recorder(start: LedgerState, at: string) {
  let state = start;
  const events: LedgerEvent[] = [];
  return {
    get state() {
      return state;
    },
    events,
    emit<T extends LedgerEventType>(type: T, body: LedgerEventBody<T>): void {
      const e = sealEvent(type, body, at, state.last_hash) as LedgerEvent;
      events.push(e);
      state = evolve(state, e);
    },
  };
}
type Recorder = ReturnType<typeof recorder>;

/** Whether `advanceTo` has anything to record at `now` (the common answer is no). */
function somethingDue(s: LedgerState, now: Date): boolean {
  return (
    s.period === null ||
    periodOf(now) > s.period ||
    (s.cancellation_effective_at !== null && Date.parse(s.cancellation_effective_at) <= now.getTime())
  );
}

/** What falls due by `now` before any command: a cancellation taking effect, a new month. */
function advanceTo(rec: Recorder, now: Date): void {
  if (!somethingDue(rec.state, now)) return;
  const due = rec.state.cancellation_effective_at;
  if (due !== null && Date.parse(due) <= now.getTime()) {
    rec.emit('PlanChanged', { tier: 'free', reason: 'cancelled_at_period_end' });
    if (rec.state.allow_overage && !overageAllowed('free')) rec.emit('OverageSwitched', { allow_overage: false });
  }
  const period = periodOf(now);
  if (rec.state.period === null || period > rec.state.period) {
    rec.emit('AllowancePeriodOpened', {
      period,
      allowance: entitlementsOf(rec.state.tier, rec.state.pro).credits,
      resets_at: nextPeriodStart(now),
    });
  }
}

const isCount = (x: unknown, min: number): x is number => Number.isSafeInteger(x) && (x as number) >= min;
const isText = (x: unknown): x is string => typeof x === 'string' && x.trim().length > 0;

/**
 * Allowance left this period; Infinity when unmetered. Overage already charged this month counts
 * against it, as in `credits_remaining` (allowance − allowance drawn − overage): after an upgrade
 * that follows overage, the raised allowance first covers the overage, so a call with overage off
 * never goes beyond what `X-Credits-Remaining` said was left.
 */
const allowanceLeft = (s: LedgerState): number =>
  s.allowance === null ? Infinity : Math.max(0, s.allowance - s.used_allowance - s.overage_credits);

function debit(rec: Recorder, cmd: DebitCredits['data']): void {
  const s = rec.state;
  const fromAllowance = Math.min(cmd.cost, allowanceLeft(s));
  const fromPrepaid = Math.min(cmd.cost - fromAllowance, s.prepaid);
  const rest = cmd.cost - fromAllowance - fromPrepaid;
  if (rest > 0 && !s.allow_overage) {
    // Same names and meanings as in `/v1/usage`; X-Credits-Remaining is their sum.
    throw new AppError(
      'credits_exhausted',
      `This call costs ${cmd.cost} credits; ${allowanceLeft(s) + s.prepaid} are left of the allowance and prepaid packs. ` +
        `Buy a pack, upgrade, turn overage on, or wait for the reset at ${s.resets_at ?? 'the next month'}.`,
      { credits_remaining: creditsRemainingNumber(s), prepaid_credits: s.prepaid, cost: cmd.cost, resets_at: s.resets_at },
    );
  }
  rec.emit('CreditsDebited', {
    request_id: cmd.request_id,
    endpoint: cmd.endpoint,
    channel: cmd.channel,
    cost: cmd.cost,
    from_allowance: fromAllowance,
    from_prepaid: fromPrepaid,
    from_overage: rest,
    period: s.period ?? '',
  });
  raiseAlerts(rec);
}

/** Each threshold newly crossed, once per period; used = allowance drawn + overage. */
function raiseAlerts(rec: Recorder): void {
  for (const threshold of USAGE_ALERT_THRESHOLDS) {
    const s = rec.state;
    if (s.allowance === null || s.allowance <= 0 || s.period === null || s.alerts.includes(threshold)) continue;
    const used = s.used_allowance + s.overage_credits;
    if (used * 100 >= threshold * s.allowance) {
      rec.emit('UsageAlertRaised', { period: s.period, threshold, used, allowance: s.allowance });
    }
  }
}

function requireOpen(s: LedgerState): void {
  if (!s.opened) throw new AppError('not_found', 'No credit ledger for this account');
}

function decideCommand(rec: Recorder, command: LedgerCommand): void {
  const s = rec.state;
  switch (command.type) {
    case 'OpenLedger':
      throw new AppError('internal', 'OpenLedger is decided before the period roll');
    case 'DebitCredits':
      debit(rec, command.data);
      return;
    case 'PurchasePack': {
      const { pack_id, credits } = command.data;
      // hasOwn: a reference such as "constructor" is not a pack every account has bought.
      if (Object.hasOwn(s.packs, pack_id)) {
        // The same purchase again (a retried script): it was credited once, nothing changes.
        if (s.packs[pack_id] === credits) return;
        throw new AppError('conflict', `Pack ${pack_id} was bought with ${s.packs[pack_id]} credits; a purchase reference names one purchase`, {
          pack_id,
          credits: s.packs[pack_id],
        });
      }
      rec.emit('PackPurchased', { pack_id, credits });
      return;
    }
    case 'SwitchOverage':
      if (command.data.on === s.allow_overage) return;
      if (command.data.on && !overageAllowed(s.tier)) {
        throw badRequest(`Overage is not available on the ${s.tier} tier`, { tier: s.tier });
      }
      rec.emit('OverageSwitched', { allow_overage: command.data.on });
      return;
    case 'SetPlan': {
      const tier = command.data.tier;
      // Setting the current tier again withdraws a pending cancellation (a re-subscribe).
      if (tier === s.tier && s.cancellation_effective_at === null) return;
      rec.emit('PlanChanged', { tier, reason: 'set' });
      if (rec.state.allow_overage && !overageAllowed(tier)) rec.emit('OverageSwitched', { allow_overage: false });
      return;
    }
    case 'CancelPlan':
      if (s.tier === 'free') throw badRequest('The free tier has no subscription to cancel');
      if (s.cancellation_effective_at !== null) return;
      rec.emit('PlanCancellationScheduled', { effective_at: s.resets_at ?? '' });
      return;
    case 'SetPro':
      if (command.data.on === s.pro) return;
      rec.emit('ProMembershipChanged', { pro: command.data.on });
      return;
    default: {
      const _exhaustive: never = command;
      throw badRequest(`Unknown ledger command ${(_exhaustive as { type: string }).type}`);
    }
  }
}

/** Refuses a malformed command before anything is decided. Inputs may come from the CLI or HTTP. */
function validate(command: LedgerCommand): void {
  switch (command.type) {
    case 'OpenLedger': {
      const d = command.data;
      if (!isText(d.account_id)) throw badRequest('account_id is required');
      if (!isTier(d.tier)) throw badRequest(`Unknown tier ${String(d.tier)}`);
      if (typeof d.pro !== 'boolean') throw badRequest('pro must be true or false');
      return;
    }
    case 'DebitCredits': {
      const d = command.data;
      if (!isText(d.request_id)) throw badRequest('request_id is required');
      if (!isRateKey(d.endpoint)) throw badRequest(`Unknown endpoint ${String(d.endpoint)}`);
      if (d.channel !== 'rest' && d.channel !== 'mcp') throw badRequest(`Unknown channel ${String(d.channel)}`);
      if (!isCount(d.cost, 0)) throw badRequest('cost must be a non-negative integer', { cost: d.cost });
      return;
    }
    case 'PurchasePack': {
      const d = command.data;
      if (!isText(d.pack_id)) throw badRequest('pack_id is required');
      if (!isCount(d.credits, 1)) throw badRequest('A pack must add a positive whole number of credits', { credits: d.credits });
      return;
    }
    case 'SwitchOverage':
    case 'SetPro':
      if (typeof command.data.on !== 'boolean') throw badRequest('on must be true or false');
      return;
    case 'SetPlan':
      if (!isTier(command.data.tier)) throw badRequest(`Unknown tier ${String(command.data.tier)}`);
      return;
    case 'CancelPlan':
      return;
    default: {
      const _exhaustive: never = command;
      throw badRequest(`Unknown ledger command ${(_exhaustive as { type: string }).type}`);
    }
  }
}

/**
 * The events a command produces at `now`, chained from `state.last_hash`; [] when it changes
 * nothing (a free call, a switch already in that position). Throws AppError: `credits_exhausted`
 * (429, extensions {credits_remaining, cost}), `bad_request`, `not_found` (no ledger), `conflict`
 * (ledger already open, a pack reference used for another purchase).
 */
export function decide(state: LedgerState, command: LedgerCommand, now: Date): LedgerEvent[] {
  return decideAndFold(state, command, now).events;
}

/**
 * `decide`, with the state those events fold to (the state given when there are none). The
 * recorder folds each event as it emits it, so a command handler need not fold them again: every
 * metered call goes through here.
 */
export function decideAndFold(state: LedgerState, command: LedgerCommand, now: Date): { events: LedgerEvent[]; state: LedgerState } {
  validate(command);
  const unchanged = { events: [], state };
  const rec = recorder(state, now.toISOString());
  if (command.type === 'OpenLedger') {
    if (state.opened) throw new AppError('conflict', `The ledger of account ${state.account_id ?? '?'} is already open`);
    const { account_id, tier, pro } = command.data;
    rec.emit('LedgerOpened', { account_id, tier, pro, allow_overage: false });
    advanceTo(rec, now);
    return { events: rec.events, state: rec.state };
  }
  requireOpen(state);
  // A free call records nothing, not even a due period roll (the next paid call records it).
  if (command.type === 'DebitCredits' && command.data.cost === 0) return unchanged;
  advanceTo(rec, now);
  const before = rec.events.length;
  decideCommand(rec, command);
  return rec.events.length === before ? unchanged : { events: rec.events, state: rec.state };
}

/** The decider as one value, for a generic command handler. */
export const ledgerDecider = {
  decide,
  evolve,
  initialState: (): LedgerState => initialLedgerState,
};

// ---------------------------------------------------------------------------------------------
// Derived numbers (`/v1/usage`, `X-Credits-Remaining`, the 429 body)

/** The state as it stands at `now`: a due cancellation applied, a new month opened. No events kept. */
export function stateAt(state: LedgerState, now: Date): LedgerState {
  // Every metered call asks twice (tier for gating, X-Credits-Remaining): skip the recorder then.
  if (!somethingDue(state, now)) return state;
  const rec = recorder(state, now.toISOString());
  advanceTo(rec, now);
  return rec.state;
}

/** allowance − used_this_month; negative only in overage; null when unmetered. */
function creditsRemainingNumber(s: LedgerState): number | null {
  return s.allowance === null ? null : s.allowance - s.used_allowance - s.overage_credits;
}

export interface UsageFigures {
  tier: Tier;
  pro_member: boolean;
  /** This period's allowance; null = unmetered (enterprise). */
  monthly_allowance: number | null;
  /** Credits drawn from the allowance plus overage credits, this month. */
  used_this_month: number;
  /** monthly_allowance − used_this_month; negative only in overage; null when unmetered. */
  credits_remaining: number | null;
  overage_credits: number;
  overage_cost_usd: number;
  /** null when the tier cannot run into overage. */
  overage_per_1k_usd: number | null;
  prepaid_credits: number;
  allow_overage: boolean;
  /** ISO instant the allowance resets (next month's 1st, 00:00Z). */
  resets_at: string;
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
