/**
 * How a ledger decision records its events (`recorder`: chained, sealed and folded as they are
 * emitted) and what falls due by a clock alone before any command (`advanceTo`: finished months
 * closed, a scheduled cancellation or downgrade applied, a new month opened). Both the decider
 * (commands/ledger) and the figures read at `now` (ledger.figures.ts) use them.
 */
import { entitlementsOf, overageAllowed } from '../plans.js';
import { sealEvent, type LedgerEvent, type LedgerEventBody, type LedgerEventType } from './ledger.events.js';
import { nextPeriodStart, periodOf } from './billing-period.js';
import { carriedOf, evolve, type LedgerState } from './ledger.state.js';

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

