/**
 * Usage read models from the credit ledgers (`ledger-<account_id>`):
 * - `usage_balances`: one document per account and month with that month's figures;
 * - `ledger_entries`: where the lines `GET /v1/usage/ledger` lists are in the log: one document per
 *   event, or per run of debits (a range);
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
import type { UsageAlertThreshold } from '../../src/domain/plans.js';
import { evolve, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { usageFigures, type UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { ledgerAccountOf } from '../shared/ledger-streams.js';
import {
  LEDGER_EVENT_TYPES,
  isLedgerEvent,
  lineCount,
  type LedgerEvent,
  type LedgerEventType,
} from '../../src/domain/ledger/ledger.events.js';

// ---------------------------------------------------------------------------------------------
// Documents

/**
 * One account's figures for one calendar month (UTC), as they stood after its last event: the
 * figures `/v1/usage` shows (`prepaid_credits` at the end of the month so far), and the month's tally.
 */
export interface UsageBalanceDoc
  extends Pick<UsageFigures, 'period' | 'tier' | 'allow_overage' | 'used_this_month' | 'credits_remaining' | 'overage_credits' | 'overage_cost_usd' | 'prepaid_credits' | 'resets_at'> {
  account_id: string;
  pro: boolean;
  /** The month's allowance; null = unmetered (enterprise). */
  allowance: number | null;
  /** Credits drawn from the allowance. */
  used_allowance: number;
  /** Number of charged calls. */
  debits: number;
  /** Sum of their costs, whatever source paid them. */
  credits_debited: number;
  /** Alert thresholds raised this month, in the order they fired. */
  alerts: UsageAlertThreshold[];
}

/**
 * Where a range of ledger lines is in the log: the revision of its first event and how many
 * consecutive events it covers, the seq of its first line and how many lines they stand for (a
 * batch of calls: one per call), and what it is found by. An entry is one event, or a run of
 * debits of one kind and month (up to RANGE_LINES lines): a call made alone adds a line to the
 * open range rather than a document of its own. The lines themselves are read from the log
 * (`statementLines` in queries/shared/ledger-lines.ts): a copy here would store every metered call twice.
 */
export interface LedgerEntryDoc {
  account_id: string;
  /** Seq of the event's first ledger line: lines are numbered 0, 1, 2… without a gap over the account's ledger. */
  seq: number;
  /** Lines the entry's events stand for: a batch's calls one each, any other event 1. */
  lines: number;
  /** The first event's revision in `ledger-<account_id>` (0-based). */
  revision: number;
  /** Consecutive events of the stream the entry covers, from `revision`. */
  events: number;
  /** `YYYY-MM` its lines belong to: the event's own period, else the month of `at`. */
  period: string;
  kind: LedgerEventType;
}

/**
 * The projection's running fold of one account: the decider state plus the current month's
 * call tally, and the revision of the last event applied (the idempotency guard).
 */
export interface LedgerStateDoc {
  account_id: string;
  /** Revision of the last event applied; -1 before the first. */
  seq: number;
  /** Ledger lines applied (the seq the next line gets). */
  lines: number;
  /** The last entry written, which the next debit may extend; null before the first. */
  open: LedgerEntryDoc | null;
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
  return { account_id: accountId, seq: -1, lines: 0, open: null, state: initialLedgerState, debits: 0, credits_debited: 0 };
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

/** Lines a range of debits covers at most: a page of the statement reads at most that many events per entry. */
export const RANGE_LINES = 100;

/** The entry of the ledger event at `revision`, whose first line is `seq`. */
export function entryOf(accountId: string, seq: number, revision: number, e: LedgerEvent): LedgerEntryDoc {
  const d = e.data as unknown as Record<string, unknown>;
  const period = typeof d['period'] === 'string' ? d['period'] : '';
  return { account_id: accountId, seq, lines: lineCount(e), revision, events: 1, period: period || monthOf(d['at']), kind: e.type };
}

/** `open` extended by the next event's entry `own`, or null when `own` starts an entry of its own. */
function extended(open: LedgerEntryDoc | null, own: LedgerEntryDoc): LedgerEntryDoc | null {
  if (open === null || (own.kind !== 'CreditsDebited' && own.kind !== 'CreditsDebitedBatch')) return null;
  if (open.kind !== own.kind || open.period !== own.period || open.revision + open.events !== own.revision) return null;
  if (open.seq + open.lines !== own.seq || open.lines + own.lines > RANGE_LINES) return null;
  return { ...open, lines: open.lines + own.lines, events: open.events + 1 };
}


export interface UsageStep {
  fold: LedgerStateDoc;
  /** The month document to write, or null when the event leaves every month as it was. */
  balance: UsageBalanceDoc | null;
  /** The entry the event is in (a new one, or the open range it extends); null for data that is not a ledger event's (nothing to show). */
  entry: LedgerEntryDoc | null;
  /** Seq of the event's first line. */
  seq: number;
}

/**
 * Applies one event of the account's stream (at revision `seq`) to the fold.
 *
 * A month's document shows the state after the last event decided in that month. The plan
 * fall-back of a cancellation (and the overage switch-off it forces) is recorded with the next
 * month's first decision, just before that month opens: it is dated in the new month and shows
 * there, not on the finished month.
 */
export function usageStep(fold: LedgerStateDoc, event: { type: string; data: unknown }, revision: number): UsageStep {
  if (!isLedgerEvent(event) || event.data === null || typeof event.data !== 'object') return { fold: { ...fold, seq: revision }, balance: null, entry: null, seq: fold.lines };
  const e = event;
  const state = evolve(fold.state, e);
  const newPeriod = state.period !== fold.state.period;
  const { calls, credits } = charged(e);
  const own = entryOf(fold.account_id, fold.lines, revision, e);
  const entry = extended(fold.open, own) ?? own;
  const next: LedgerStateDoc = {
    account_id: fold.account_id,
    seq: revision,
    lines: fold.lines + own.lines,
    open: entry,
    state,
    debits: (newPeriod ? 0 : fold.debits) + calls,
    credits_debited: (newPeriod ? 0 : fold.credits_debited) + credits,
  };
  const decidedIn = monthOf(e.data.at);
  const balance = state.period !== null && decidedIn <= state.period ? balanceOf(next) : null;
  return { fold: next, balance, entry, seq: fold.lines };
}

/** Calls an event charges and the credits they cost. */
function charged(e: LedgerEvent): { calls: number; credits: number } {
  if (e.type === 'CreditsDebited') return typeof e.data.cost === 'number' ? { calls: 1, credits: e.data.cost } : { calls: 0, credits: 0 };
  if (e.type !== 'CreditsDebitedBatch') return { calls: 0, credits: 0 };
  const n = lineCount(e);
  let credits = 0;
  for (let i = 0; i < n; i++) credits += e.data.calls.cost[i]!;
  return { calls: n, credits };
}

export interface UsageReplay {
  fold: LedgerStateDoc;
  /** Every month's document, oldest first. */
  balances: UsageBalanceDoc[];
  /** Every entry, in seq order (a range as it ends). */
  entries: LedgerEntryDoc[];
}

/** Adds a step's entry to entries in seq order: a range it extends is replaced. */
export function addEntry(entries: LedgerEntryDoc[], entry: LedgerEntryDoc): void {
  if (entries.at(-1)?.seq === entry.seq) entries[entries.length - 1] = entry;
  else entries.push(entry);
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
    if (step.entry) addEntry(entries, step.entry);
  }
  return {
    fold,
    balances: [...balances.values()].sort((a, b) => (a.period < b.period ? -1 : a.period > b.period ? 1 : 0)),
    entries,
  };
}

// ---------------------------------------------------------------------------------------------
// Projection

export const usageProjection: Projection = {
  // v5: an entry is a range of events (v4: one event; a new name rebuilds the read models of an existing store).
  name: 'usage-v5',
  collections: [usageBalances, ledgerEntries, ledgerStates],
  eventTypes: LEDGER_EVENT_TYPES,
  apply(raw: RecordedEvent, ctx: ProjectionContext) {
    return applyLedgerEvents([raw], ctx);
  },
  applyBatch: applyLedgerEvents,
};

/**
 * Applies ledger events in order. Each account's folded state is written after its months and
 * entries: the state's revision is what tells a re-delivered event, so a store that applies a
 * commit's writes in order without a transaction (MongoDB standalone, FerretDB) and stops half-way
 * must not show that revision before the documents it stands for. (Written first, a crash between
 * left an entry short for good: the re-delivery was skipped as applied.)
 */
async function applyLedgerEvents(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  const folds = new Map<string, LedgerStateDoc>();
  for (const raw of events) {
    const accountId = ledgerAccountOf(raw.streamId);
    if (accountId === null) continue;
    const fold = folds.get(accountId) ?? (await ctx.get(ledgerStates, accountId)) ?? startFold(accountId);
    // Applied before (a re-delivery): the revision says so.
    if (raw.revision <= fold.seq) continue;
    const step = usageStep(fold, raw, raw.revision);
    folds.set(accountId, step.fold);
    if (step.balance) ctx.upsert(usageBalances, step.balance);
    if (step.entry) ctx.upsert(ledgerEntries, step.entry);
  }
  for (const fold of folds.values()) ctx.upsert(ledgerStates, fold);
}
