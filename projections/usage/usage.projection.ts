/**
 * Usage read models from the credit ledgers (`ledger-<account_id>`):
 * - `usage_balances`: one document per account and month with that month's figures;
 * - `ledger_entries`: one document per ledger event, what `GET /v1/usage/ledger` lists;
 * - `ledger_states`: the folded `LedgerState` of each account, so that each event is applied
 *   with the decider's own `evolve` and its figures come from `usageFigures` (no second copy of
 *   the metering arithmetic here).
 *
 * Documents hold only event data and what is derived from it (never log positions or the wall
 * clock), so a rebuild from the log gives identical documents and `scores audit` can recompute
 * them with `replayUsage` and compare.
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { Tier, UsageAlertThreshold } from '../../src/domain/plans.js';
import type { RateKey } from '../../src/domain/rate-card.js';
import { evolve, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { usageFigures } from '../../src/domain/ledger/ledger.figures.js';
import {
  LEDGER_EVENT_TYPES,
  LEDGER_STREAM_PREFIX,
  isLedgerEvent,
  type Channel,
  type LedgerEvent,
  type LedgerEventType,
} from '../../src/events/ledger.events.js';

// ---------------------------------------------------------------------------------------------
// Documents

/** One account's figures for one calendar month (UTC), as they stood after its last event. */
export interface UsageBalanceDoc {
  account_id: string;
  /** `YYYY-MM` */
  period: string;
  tier: Tier;
  pro: boolean;
  allow_overage: boolean;
  /** The month's allowance; null = unmetered (enterprise). */
  allowance: number | null;
  /** Credits drawn from the allowance. */
  used_allowance: number;
  /** used_allowance + overage_credits (`used_this_month` of `/v1/usage`). */
  used_this_month: number;
  /** allowance − used_this_month; negative only in overage; null when unmetered. */
  credits_remaining: number | null;
  overage_credits: number;
  overage_cost_usd: number;
  /** Banked pack credits at the end of the month (so far). */
  prepaid_credits: number;
  /** Number of charged calls. */
  debits: number;
  /** Sum of their costs, whatever source paid them. */
  credits_debited: number;
  /** Alert thresholds raised this month, in the order they fired. */
  alerts: UsageAlertThreshold[];
  /** When the month's allowance resets. */
  resets_at: string;
}

/**
 * One ledger event as stored for an account's statement: the event's data exactly as hashed,
 * once, with only what it is found by beside it. Every other field of a line is derived from the
 * data when it is read (`lineOf`): storing them again would double what each metered call costs
 * in the read models.
 */
export interface LedgerEntryDoc {
  account_id: string;
  /** The event's revision in `ledger-<account_id>` (0-based). */
  seq: number;
  /** `YYYY-MM` the line belongs to: the event's own period, else the month of `at`. */
  period: string;
  kind: LedgerEventType;
  /** The event's data exactly as hashed (with `hash`): what a customer recomputes the chain from. */
  data: Record<string, unknown>;
}

/** A statement line, as `/v1/usage/ledger` shows it. Fields an event does not carry are null. */
export interface LedgerLine {
  seq: number;
  period: string;
  kind: LedgerEventType;
  at: string;
  request_id: string | null;
  endpoint: RateKey | null;
  channel: Channel | null;
  cost: number | null;
  from_allowance: number | null;
  from_prepaid: number | null;
  from_overage: number | null;
  /** Credits a pack added. */
  credits: number | null;
  /** A short human description of the line. */
  detail: string;
  hash: string;
  prev_hash: string;
  data: Record<string, unknown>;
}

/**
 * The projection's running fold of one account: the decider state plus the current month's
 * call tally, and the revision of the last event applied (the idempotency guard).
 */
export interface LedgerStateDoc {
  account_id: string;
  /** Revision of the last event applied; -1 before the first. */
  seq: number;
  state: LedgerState;
  /** Calls charged and credits debited in `state.period`. */
  debits: number;
  credits_debited: number;
}

export const balanceKey = (accountId: string, period: string) => `${accountId}|${period}`;
/** Zero-padded so that id order is ledger order. */
export const entryKey = (accountId: string, seq: number) => `${accountId}|${String(seq).padStart(10, '0')}`;

export const usageBalances = defineCollection<UsageBalanceDoc>({
  name: 'usage_balances',
  key: (d) => balanceKey(d.account_id, d.period),
  fields: ['account_id', 'period'],
  indexes: [['account_id', 'period'], ['period']],
});

export const ledgerEntries = defineCollection<LedgerEntryDoc>({
  name: 'ledger_entries',
  key: (d) => entryKey(d.account_id, d.seq),
  fields: ['account_id', 'period', 'seq'],
  indexes: [
    ['account_id', 'seq'],
    ['account_id', 'period', 'seq'],
  ],
});

export const ledgerStates = defineCollection<LedgerStateDoc>({
  name: 'ledger_states',
  key: (d) => d.account_id,
  fields: ['account_id'],
  indexes: [],
});

// ---------------------------------------------------------------------------------------------
// Pure fold (shared by the projection and the audit)

export function startFold(accountId: string): LedgerStateDoc {
  return { account_id: accountId, seq: -1, state: initialLedgerState, debits: 0, credits_debited: 0 };
}

/** `YYYY-MM` of an ISO instant as written in event data ('' when it is not one). */
const monthOf = (at: unknown): string => (typeof at === 'string' && /^\d{4}-\d{2}/.test(at) ? at.slice(0, 7) : '');

/**
 * The month's document from the folded state. The figures are `usageFigures` at the first
 * instant of the month: inside the month, so nothing is rolled forward.
 */
export function balanceOf(fold: LedgerStateDoc): UsageBalanceDoc | null {
  const { state } = fold;
  if (state.period === null) return null;
  const start = new Date(`${state.period}-01T00:00:00.000Z`);
  if (Number.isNaN(start.getTime())) return null;
  const f = usageFigures(state, start);
  return {
    account_id: fold.account_id,
    period: state.period,
    tier: f.tier,
    pro: f.pro_member,
    allow_overage: f.allow_overage,
    allowance: f.monthly_allowance,
    used_allowance: state.used_allowance,
    used_this_month: f.used_this_month,
    credits_remaining: f.credits_remaining,
    overage_credits: f.overage_credits,
    overage_cost_usd: f.overage_cost_usd,
    prepaid_credits: f.prepaid_credits,
    debits: fold.debits,
    credits_debited: fold.credits_debited,
    alerts: [...state.alerts],
    resets_at: f.resets_at,
  };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function describeEvent(e: LedgerEvent): string {
  switch (e.type) {
    case 'LedgerOpened':
      return `Ledger opened on the ${e.data.tier} tier${e.data.pro ? ' with Pro membership' : ''}, overage off`;
    case 'LedgerPeriodClosed':
      return `Period ${e.data.period} closed: ${plural(e.data.carried.prepaid, 'prepaid credit')} carried over`;
    case 'AllowancePeriodOpened':
      return e.data.allowance === null
        ? `Period ${e.data.period} opened: unmetered`
        : `Period ${e.data.period} opened: allowance of ${plural(e.data.allowance, 'credit')}`;
    case 'CreditsDebited': {
      const d = e.data;
      const parts = [
        d.from_allowance ? `${d.from_allowance} from the allowance` : '',
        d.from_prepaid ? `${d.from_prepaid} from prepaid` : '',
        d.from_overage ? `${d.from_overage} as overage` : '',
      ].filter(Boolean);
      return `${plural(d.cost, 'credit')} for ${d.endpoint} (${d.channel})${parts.length ? `: ${parts.join(', ')}` : ''}`;
    }
    case 'PackPurchased':
      return `Pack ${e.data.pack_id}: ${plural(e.data.credits, 'prepaid credit')} added`;
    case 'OverageSwitched':
      return `Overage switched ${e.data.allow_overage ? 'on' : 'off'}`;
    case 'PlanChanged':
      return e.data.reason === 'cancelled_at_period_end'
        ? `Plan fell back to ${e.data.tier} at the end of the cancelled subscription`
        : `Plan changed to ${e.data.tier}`;
    case 'PlanCancellationScheduled':
      return `Plan cancelled; falls back to free at ${e.data.effective_at}`;
    case 'ProMembershipChanged':
      return e.data.pro ? 'Pro membership started' : 'Pro membership ended';
    case 'UsageAlertRaised':
      return `${e.data.threshold}% of the allowance used (${e.data.used} of ${e.data.allowance}) in ${e.data.period}`;
    default: {
      const _exhaustive: never = e;
      return (_exhaustive as { type: string }).type;
    }
  }
}

const num = (x: unknown): number | null => (typeof x === 'number' ? x : null);
const str = (x: unknown): string | null => (typeof x === 'string' ? x : null);

/** The stored entry of one ledger event. */
export function entryOf(accountId: string, seq: number, e: LedgerEvent): LedgerEntryDoc {
  const d = e.data as unknown as Record<string, unknown>;
  return { account_id: accountId, seq, period: str(d['period']) || monthOf(d['at']), kind: e.type, data: d };
}

/** The statement line of a stored entry: every field derived from the event's data. */
export function lineOf(entry: LedgerEntryDoc): LedgerLine {
  const d = entry.data;
  const e = { type: entry.kind, data: d } as unknown as LedgerEvent;
  return {
    seq: entry.seq,
    period: entry.period,
    kind: entry.kind,
    at: str(d['at']) ?? '',
    request_id: str(d['request_id']),
    endpoint: str(d['endpoint']) as RateKey | null,
    channel: str(d['channel']) as Channel | null,
    cost: num(d['cost']),
    from_allowance: num(d['from_allowance']),
    from_prepaid: num(d['from_prepaid']),
    from_overage: num(d['from_overage']),
    credits: entry.kind === 'PackPurchased' ? num(d['credits']) : null,
    detail: describeEvent(e),
    hash: str(d['hash']) ?? '',
    prev_hash: str(d['prev_hash']) ?? '',
    data: d,
  };
}

export interface UsageStep {
  fold: LedgerStateDoc;
  /** The month document to write, or null when the event leaves every month as it was. */
  balance: UsageBalanceDoc | null;
  /** Null for an event whose data is not a ledger event's (nothing to show). */
  entry: LedgerEntryDoc | null;
}

/**
 * Applies one event of the account's stream (at revision `seq`) to the fold.
 *
 * A month's document shows the state after the last event decided in that month. The plan
 * fall-back of a cancellation (and the overage switch-off it forces) is recorded with the next
 * month's first decision, just before that month opens: it is dated in the new month and shows
 * there, not on the finished month.
 */
export function usageStep(fold: LedgerStateDoc, event: { type: string; data: unknown }, seq: number): UsageStep {
  if (!isLedgerEvent(event) || event.data === null || typeof event.data !== 'object') return { fold: { ...fold, seq }, balance: null, entry: null };
  const e = event;
  const state = evolve(fold.state, e);
  const newPeriod = state.period !== fold.state.period;
  const charged = e.type === 'CreditsDebited' && typeof e.data.cost === 'number' ? e.data.cost : null;
  const next: LedgerStateDoc = {
    account_id: fold.account_id,
    seq,
    state,
    debits: (newPeriod ? 0 : fold.debits) + (charged === null ? 0 : 1),
    credits_debited: (newPeriod ? 0 : fold.credits_debited) + (charged ?? 0),
  };
  const decidedIn = monthOf(e.data.at);
  const balance = state.period !== null && decidedIn <= state.period ? balanceOf(next) : null;
  return { fold: next, balance, entry: entryOf(fold.account_id, seq, e) };
}

export interface UsageReplay {
  fold: LedgerStateDoc;
  /** Every month's document, oldest first. */
  balances: UsageBalanceDoc[];
  /** Every entry, in seq order. */
  entries: LedgerEntryDoc[];
}

/** The read models of one account rebuilt from its stream's events (as the projection builds them). */
export function replayUsage(accountId: string, events: ReadonlyArray<{ type: string; data: unknown; revision: number }>): UsageReplay {
  let fold = startFold(accountId);
  const balances = new Map<string, UsageBalanceDoc>();
  const entries: LedgerEntryDoc[] = [];
  for (const e of events) {
    const step = usageStep(fold, e, e.revision);
    fold = step.fold;
    if (step.balance) balances.set(step.balance.period, step.balance);
    if (step.entry) entries.push(step.entry);
  }
  return {
    fold,
    balances: [...balances.values()].sort((a, b) => (a.period < b.period ? -1 : a.period > b.period ? 1 : 0)),
    entries,
  };
}

/** The account a ledger stream belongs to, or null for any other stream. */
export function ledgerAccountOf(streamId: string): string | null {
  return streamId.startsWith(LEDGER_STREAM_PREFIX) && streamId.length > LEDGER_STREAM_PREFIX.length
    ? streamId.slice(LEDGER_STREAM_PREFIX.length)
    : null;
}

// ---------------------------------------------------------------------------------------------
// Projection

export const usageProjection: Projection = {
  // v3: entries store the event's data once (a new name rebuilds the read models of an existing store).
  name: 'usage-v3',
  collections: [usageBalances, ledgerEntries, ledgerStates],
  eventTypes: LEDGER_EVENT_TYPES,
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const accountId = ledgerAccountOf(raw.streamId);
    if (accountId === null) return;
    const fold = (await ctx.get(ledgerStates, accountId)) ?? startFold(accountId);
    // Applied before (a re-delivery): the revision says so.
    if (raw.revision <= fold.seq) return;
    const step = usageStep(fold, raw, raw.revision);
    ctx.upsert(ledgerStates, step.fold);
    if (step.balance) ctx.upsert(usageBalances, step.balance);
    if (step.entry) ctx.upsert(ledgerEntries, step.entry);
  },
};
