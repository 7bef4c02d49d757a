/**
 * The credit ledger of one developer account: pure `decide` over `ledger-<account_id>`, on the
 * state the kernel's `evolve` folds (src/domain/ledger/ledger.state.ts).
 *
 * This is where "may this call spend N credits?" is answered, strongly consistent on the write
 * side (docs/architecture.md): the handler folds the stream, calls `decide` and appends with the
 * expected revision, deciding again on a concurrency conflict.
 *
 * Rules (docs/ledger.md):
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
import type { Decider } from '../../core/decider.js';
import { AppError, badRequest } from '../../core/errors.js';
import { USAGE_ALERT_THRESHOLDS, isTier, overageAllowed } from '../plans.js';
import { creditOptions, credits, creditsLeft, joinOr } from '../credit-options.js';
import { isRateKey } from '../rate-card.js';
import { creditsRemainingNumber } from './ledger.figures.js';
import { monthlyPriceCents } from './proration.js';
import { quotePro, quoteUpgrade, requireQuoted } from './plan-quotes.js';
import { evolve, initialLedgerState, type LedgerState } from './ledger.state.js';
import { advanceTo, recorder, type Recorder } from './ledger.recorder.js';
import { openLedger, validateOpening } from './ledger.opening.js';
import type { DebitCredits, DowngradePlan, LedgerCommand, PurchasePack, SetPlan, StartPro, UpgradePlan } from './ledger.commands.js';
import { packDebits, withCallKeys, type LedgerEvent } from './ledger.events.js';
import { NO_KEY_SPEND, addSpend, budgetLeft, foldKeySpend, requireKeyBudget, spentAt, type KeySpend } from './key-spend.js';

const isCount = (x: unknown, min: number): x is number => Number.isSafeInteger(x) && (x as number) >= min;
const isText = (x: unknown): x is string => typeof x === 'string' && x.trim().length > 0;
const validBudget = (b: { daily: unknown; monthly: unknown } | null): boolean => b !== null && typeof b === 'object' && [b.daily, b.monthly].every((v) => v === null || isCount(v, 1));

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
    throw new AppError('credits_exhausted', creditsExhaustedDetail(s, cmd.cost), {
      credits_remaining: creditsRemainingNumber(s),
      prepaid_credits: s.prepaid,
      cost: cmd.cost,
      resets_at: s.resets_at,
    });
  }
  // The call's key (cmd.key_id) is no field of its line: the ledger service keeps it beside the
  // line, in the appended event's metadata (ledger.handler.ts), out of the hash and of /v1 answers.
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

/**
 * The refusal's detail: the cost, what is left and the reset, and only the ways out the account's
 * tier allows (free cannot turn overage on; the Pro membership adds credits on free only).
 */
function creditsExhaustedDetail(s: LedgerState, cost: number): string {
  const stop = overageAllowed(s.tier) ? 'Overage is off' : `The ${s.tier} plan has no overage`;
  const options = joinOr(creditOptions({ tier: s.tier, pro: s.pro, allow_overage: s.allow_overage, allowance: s.allowance }));
  return (
    `This call costs ${credits(cost)} and ${creditsLeft(allowanceLeft(s) + s.prepaid)} (allowance and prepaid packs together). ` +
    `${stop}: ${options} on the account page, or wait for the allowance to reset at ${s.resets_at ?? 'the start of next month'}.`
  );
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

function purchasePack(rec: Recorder, { pack_id, credits, price_cents, payment_ref }: PurchasePack['data']): void {
  const s = rec.state;
  // hasOwn: a reference such as "constructor" is not a pack every account has bought.
  if (Object.hasOwn(s.packs, pack_id)) {
    // The same purchase again (a retried script): it was credited once, nothing changes.
    if (s.packs[pack_id] === credits) return;
    throw new AppError('conflict', `Pack ${pack_id} was bought with ${s.packs[pack_id]} credits; a purchase reference names one purchase`, {
      pack_id,
      credits: s.packs[pack_id],
    });
  }
  rec.emit('PackPurchased', price_cents === undefined ? { pack_id, credits } : { pack_id, credits, price_cents, payment_ref });
}

function setPlan(rec: Recorder, { tier }: SetPlan['data']): void {
  // Setting the current tier again withdraws a pending cancellation (a re-subscribe).
  if (tier === rec.state.tier && rec.state.cancellation_effective_at === null) return;
  rec.emit('PlanChanged', { tier, reason: 'set' });
  if (rec.state.allow_overage && !overageAllowed(tier)) rec.emit('OverageSwitched', { allow_overage: false });
}

function upgradePlan(rec: Recorder, { tier, amount_cents, payment_ref }: UpgradePlan['data']): void {
  const s = rec.state;
  // The same payment again (the form sent twice): recorded once already.
  if (payment_ref === s.last_payment_ref) return;
  const quoted = quoteUpgrade(s, tier, rec.now);
  requireQuoted(quoted, amount_cents);
  const from = s.tier;
  rec.emit('PlanChanged', { tier, reason: 'set' });
  rec.emit('ProrationCharged', { kind: 'plan', from, to: tier, days: quoted.days, days_in_month: quoted.days_in_month, amount_cents, payment_ref, period: s.period ?? '' });
}

function downgradePlan(rec: Recorder, { tier }: DowngradePlan['data']): void {
  const s = rec.state;
  const from = monthlyPriceCents(s.tier);
  const to = monthlyPriceCents(tier);
  if (from === null || to === null) throw badRequest(`The ${from === null ? s.tier : tier} plan is not sold self-serve`);
  if (to >= from) throw badRequest(`${tier} is not a downgrade from ${s.tier}`);
  if (s.cancellation_effective_at !== null && (s.scheduled_tier ?? 'free') === tier) return;
  rec.emit('PlanDowngradeScheduled', { tier, effective_at: s.resets_at ?? '' });
}

function startPro(rec: Recorder, { amount_cents, payment_ref }: StartPro['data']): void {
  const s = rec.state;
  if (payment_ref === s.last_payment_ref) return;
  const quoted = quotePro(s, rec.now);
  requireQuoted(quoted, amount_cents);
  rec.emit('ProMembershipChanged', { pro: true });
  rec.emit('ProrationCharged', { kind: 'pro', from: 'none', to: 'pro', days: quoted.days, days_in_month: quoted.days_in_month, amount_cents: quoted.amount_cents, payment_ref, period: s.period ?? '' });
}

function decideCommand(rec: Recorder, command: LedgerCommand): void {
  const s = rec.state;
  switch (command.type) {
    case 'OpenLedger':
      throw new AppError('internal', 'OpenLedger is decided before the period roll');
    case 'DebitCredits':
      return debit(rec, command.data);
    case 'PurchasePack':
      return purchasePack(rec, command.data);
    case 'SwitchOverage':
      if (command.data.on === s.allow_overage) return;
      if (command.data.on && !overageAllowed(s.tier)) {
        throw badRequest(`Overage is not available on the ${s.tier} tier`);
      }
      rec.emit('OverageSwitched', { allow_overage: command.data.on });
      return;
    case 'SetPlan':
      return setPlan(rec, command.data);
    case 'CancelPlan':
      if (s.tier === 'free') throw badRequest('The free tier has no subscription to cancel');
      // A pending cancellation stands; a pending downgrade gives way to it.
      if (s.cancellation_effective_at !== null && (s.scheduled_tier ?? null) === null) return;
      rec.emit('PlanCancellationScheduled', { effective_at: s.resets_at ?? '' });
      return;
    case 'SetPro':
      if (command.data.on === s.pro) return;
      rec.emit('ProMembershipChanged', { pro: command.data.on });
      return;
    case 'CloseFinishedMonths':
      return;
    case 'UpgradePlan':
      return upgradePlan(rec, command.data);
    case 'DowngradePlan':
      return downgradePlan(rec, command.data);
    case 'StartPro':
      return startPro(rec, command.data);
    default: {
      const _exhaustive: never = command;
      throw badRequest(`Unknown ledger command ${(_exhaustive as { type: string }).type}`);
    }
  }
}

/** Refuses a malformed command before anything is decided. Inputs may come from the CLI or HTTP. */
function validate(command: LedgerCommand): void {
  switch (command.type) {
    case 'OpenLedger':
      return validateOpening(command.data);
    case 'DebitCredits': {
      const d = command.data;
      if (!isText(d.request_id)) throw badRequest('request_id is required');
      if (!isRateKey(d.endpoint)) throw badRequest(`Unknown endpoint ${String(d.endpoint)}`);
      if (d.channel !== 'rest' && d.channel !== 'mcp') throw badRequest(`Unknown channel ${String(d.channel)}`);
      if (!isCount(d.cost, 0)) throw badRequest('cost must be a non-negative integer', { cost: d.cost });
      if (d.key_id !== undefined && !isText(d.key_id)) throw badRequest('key_id must name a key');
      if (d.key_budget !== undefined && !validBudget(d.key_budget)) throw badRequest('key_budget names whole-number limits (or null) of a key');
      return;
    }
    case 'PurchasePack': {
      const d = command.data;
      if (!isText(d.pack_id)) throw badRequest('pack_id is required');
      if (!isCount(d.credits, 1)) throw badRequest('A pack must add a positive whole number of credits', { credits: d.credits });
      if (d.price_cents !== undefined && (!isCount(d.price_cents, 0) || !isText(d.payment_ref))) throw badRequest('A sold pack needs its price in cents and its payment reference');
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
    case 'UpgradePlan':
    case 'StartPro': {
      const d = command.data;
      if (command.type === 'UpgradePlan' && !isTier(command.data.tier)) throw badRequest(`Unknown tier ${String(command.data.tier)}`);
      if (!isCount(d.amount_cents, 0)) throw badRequest('amount_cents must be a whole number of cents', { amount_cents: d.amount_cents });
      if (!isText(d.payment_ref)) throw badRequest('payment_ref is required');
      return;
    }
    case 'DowngradePlan':
      if (!isTier(command.data.tier)) throw badRequest(`Unknown tier ${String(command.data.tier)}`);
      return;
    case 'CloseFinishedMonths':
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
function decide(state: LedgerState, command: LedgerCommand, now: Date): LedgerEvent[] {
  return decideAndFold(state, command, now).events;
}

/**
 * `decide`, with the state those events fold to (the state given when there are none). The
 * recorder folds each event as it emits it, so the command handler need not fold them again: every
 * metered call goes through here.
 */
export function decideAndFold(state: LedgerState, command: LedgerCommand, now: Date): { events: LedgerEvent[]; state: LedgerState } {
  validate(command);
  if (command.type === 'OpenLedger') return openLedger(state, command.data, now);
  const unchanged = { events: [], state };
  requireOpen(state);
  // A free call records nothing, not even a due period roll (the next paid call records it).
  if (command.type === 'DebitCredits' && command.data.cost === 0) return unchanged;
  const rec = recorder(state, now.toISOString());
  advanceTo(rec, now);
  // The sweep's whole purpose is what fell due.
  if (command.type === 'CloseFinishedMonths') return { events: rec.events, state: rec.state };
  const before = rec.events.length;
  decideCommand(rec, command);
  return rec.events.length === before ? unchanged : { events: rec.events, state: rec.state };
}

export const ledgerDecider = { initialState: (): LedgerState => initialLedgerState, evolve, decide } satisfies Decider<LedgerState, LedgerCommand, LedgerEvent>;

/**
 * The state the ledger handler decides on: the ledger's own, and what each key spent today and this
 * month (key-spend.ts), folded from the debits' metadata beside it.
 */
export interface LedgerDecisionState {
  ledger: LedgerState;
  keys: KeySpend;
}

export const initialDecisionState = (): LedgerDecisionState => ({ ledger: initialLedgerState, keys: NO_KEY_SPEND });

/** Folds a recorded event of the stream into both parts (the key spend reads the event's metadata). */
export function evolveDecision(s: LedgerDecisionState, e: LedgerEvent & { metadata?: Record<string, unknown> | null }): LedgerDecisionState {
  const keys = foldKeySpend(s.keys, e);
  return { ledger: evolve(s.ledger, e), keys };
}

/**
 * What one command of a batch came to: its events and the ledger state after them, or why it was
 * refused. `key_budget_remaining`: for a debit of a key with limits, what the key may still spend
 * after it (the smaller of the day's and the month's rest).
 */
export type BatchOutcome = { ok: true; events: LedgerEvent[]; state: LedgerState; key_budget_remaining?: number | null } | { ok: false; error: unknown };

/** The key of each call that names one, by its request id. */
function callKeysOf(commands: readonly LedgerCommand[]): Map<string, string> {
  const keys = new Map<string, string>();
  for (let i = 0; i < commands.length; i++) {
    const c = commands[i]!;
    if (c.type === 'DebitCredits' && c.data.key_id) keys.set(c.data.request_id, c.data.key_id);
  }
  return keys;
}

/**
 * One command of a batch on `state`: a debit of a key with limits is first held to them (on the
 * spend the commands before it in the batch left), then decided on the ledger; a charged debit adds
 * its cost to its key's spend. `owned`: the spend is a copy this batch made, changed in place.
 */
function decideOne(state: LedgerDecisionState, command: LedgerCommand, now: Date, owned: boolean): { decided: { events: LedgerEvent[]; state: LedgerState }; keys: KeySpend; left?: number | null } {
  const debit = command.type === 'DebitCredits' ? command.data : null;
  const budget = debit?.key_id ? debit.key_budget : undefined;
  const at = debit?.key_id ? now.toISOString() : '';
  if (budget && debit!.cost > 0) requireKeyBudget(state.keys, debit!.key_id!, budget, debit!.cost, now, at);
  const decided = decideAndFold(state.ledger, command, now);
  const charged = debit?.key_id && decided.events.length > 0 ? debit.cost : 0;
  const keys = charged > 0 ? addSpend(state.keys, [[debit!.key_id!, charged]], at, owned) : state.keys;
  if (!budget) return { decided, keys };
  return { decided, keys, left: budgetLeft(budget, spentAt(keys, debit!.key_id!, at)) };
}

/**
 * The commands that queued up for one account while its previous append was committing (the
 * ledger service, commands/ledger/ledger.handler.ts), each decided on the state the one before
 * left, key spend included, so that calls queued together cannot overspend a key between them; a
 * refused one changes nothing and the others still go. Their events are appended as one: a
 * batch's calls become one event (each line still hashed on its own), with each call's key beside
 * it (the account page's "last used", and the key spend folded back from the log).
 */
export const ledgerBatchDecider: Decider<LedgerDecisionState, readonly LedgerCommand[], LedgerEvent, BatchOutcome[]> = {
  initialState: initialDecisionState,
  evolve: evolveDecision,
  decide(start, commands, now) {
    let state = start;
    let owned = false;
    const outcomes: BatchOutcome[] = [];
    const events: LedgerEvent[] = [];
    for (let i = 0; i < commands.length; i++) {
      try {
        const one = decideOne(state, commands[i]!, now, owned);
        owned ||= one.keys !== state.keys;
        state = { ledger: one.decided.state, keys: one.keys };
        for (let e = 0; e < one.decided.events.length; e++) events.push(one.decided.events[e]!);
        outcomes.push(one.left === undefined ? { ok: true, events: one.decided.events, state: state.ledger } : { ok: true, events: one.decided.events, state: state.ledger, key_budget_remaining: one.left });
      } catch (error) {
        outcomes.push({ ok: false, error });
      }
    }
    return { events: withCallKeys(packDebits(events), callKeysOf(commands)), state, result: outcomes };
  },
};
