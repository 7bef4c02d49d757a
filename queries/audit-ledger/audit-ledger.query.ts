/**
 * `scores audit`: replays an account's credit ledger from its first event and checks it.
 *
 * 1. The hash chain (`verifyChain`): every event's `hash` matches its data, every `prev_hash` is the
 *    hash of the event before it, the first one's is the genesis hash. An edited event, or an
 *    event removed, inserted or reordered in the middle, breaks it. Revisions must also run
 *    0, 1, 2… without a gap. A batch of calls is checked call by call (`verifyChain`).
 * 2. The read models: every month's figures are recomputed by folding the events with the
 *    decider's `evolve` (`replayUsage`, what the usage projection runs) and compared field by
 *    field with the `usage_balances` documents; every `ledger_entries` document (where an event's
 *    lines are) with the event at its revision. A ledger cut short at its end keeps a valid chain, but the read models (built before
 *    the cut) then hold more than the log does, and that is reported.
 *
 * The server may be serving (and the projector applying new debits) while the audit runs. The
 * audit reads one consistent view of the account's read models (it reads them again if the
 * account's running state moved meanwhile: every batch that changes its documents changes that
 * state, in the same transaction) and compares it with the log up to the revision the read models have
 * applied. Events after it are checked in the chain and counted in `not_yet_projected`, not
 * compared: a projector catching up is not a discrepancy.
 */
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { CollectionDef, Page, ReadStore } from '../../src/core/read-store.port.js';
import { accounts } from '../../projections/shared/accounts.js';
import {
  ledgerEntries,
  ledgerStates,
  replayUsage,
  usageBalances,
  usageProjection,
  type LedgerEntryDoc,
  type UsageBalanceDoc,
} from '../../projections/usage/usage.projection.js';
import { canonicalJson, isLedgerEvent, ledgerStream, verifyChain, type ChainBreak } from '../../src/domain/ledger/ledger.events.js';
import { ledgerSnapshots } from '../../src/domain/ledger/ledger-snapshot.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';

export interface FieldMismatch {
  field: string;
  expected: unknown;
  actual: unknown;
}

/** One month: the figures recomputed from the log, the stored document, and how they differ. */
export interface PeriodAudit {
  period: string;
  /** Null when the log has no such month (the read model has an extra document). */
  expected: UsageBalanceDoc | null;
  /** Null when the read model has no document for the month. */
  actual: UsageBalanceDoc | null;
  mismatches: FieldMismatch[];
}

export interface EntryAudit {
  seq: number;
  kind: string | null;
  mismatches: FieldMismatch[];
}

/** The first broken link, named by the event's revision in the stream, id and type. */
export interface AuditChainBreak extends ChainBreak {
  revision: number;
  event_id: string;
  type: string;
  at: string | null;
}

export interface AuditReport {
  account_id: string;
  /** True when the chain holds and the read models equal what the log gives. */
  ok: boolean;
  /** Events in the account's ledger stream. */
  events: number;
  /** Hash of the last event: keep it elsewhere to detect a ledger cut short at its end later. */
  last_hash: string | null;
  periods: PeriodAudit[];
  entries: {
    /** Events the entries the log gives cover (an entry is an event or a range of debits). */
    expected: number;
    /** Events the stored entries cover. */
    actual: number;
    /** Lines that differ (at most ENTRY_MISMATCH_LIMIT are listed; `problems` gives the total). */
    mismatches: EntryAudit[];
  };
  chain: AuditChainBreak | null;
  /**
   * Events of the log after the revision the usage read models have applied (the projector is catching
   * up): their chain was checked, their figures were not compared.
   */
  not_yet_projected: number;
  /**
   * The account's ledger snapshot (a cache the write side starts its fold from): `none`, `ok`
   * when it equals the fold of the log up to its revision, else `differs` (a problem: the service
   * would decide on a state the log does not give; drop the snapshot).
   */
  snapshot: { status: 'none' } | { status: 'ok' | 'differs'; revision: number; mismatches: FieldMismatch[] };
  /** Every finding as a sentence, chain first; empty when ok. */
  problems: string[];
}

export interface AuditAllReport {
  ok: boolean;
  accounts: AuditReport[];
}

export interface AuditDeps {
  events: EventStore;
  reads: ReadStore;
}

export const ENTRY_MISMATCH_LIMIT = 100;
export const PAGE = 1000;

const show = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v));
const differences = (ms: FieldMismatch[]) => ms.map((m) => `${m.field} is ${show(m.actual)}, the log gives ${show(m.expected)}`).join('; ');

/** Field-by-field differences of two documents (arrays and objects compared as JSON). */
function diffDocs(expected: object, actual: object): FieldMismatch[] {
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(e), ...Object.keys(a)])];
  return fields
    .filter((f) => canonicalJson(e[f]) !== canonicalJson(a[f]))
    .map((field) => ({ field, expected: e[field], actual: a[field] }));
}

const reasonText: Record<ChainBreak['reason'], string> = {
  not_chained: 'it carries no prev_hash/hash',
  prev_hash_mismatch: 'its prev_hash is not the hash of the event before it: an event was removed, inserted or reordered before it',
  hash_mismatch: 'its data does not match its hash: it was altered after it was written',
};

export function checkChain(events: RecordedEvent[], problems: string[], start?: string): AuditChainBreak | null {
  const found = verifyChain(events, start);
  if (found === null) return null;
  const e = events[found.index]!;
  const data = e.data as Record<string, unknown> | null;
  const at = data && typeof data['at'] === 'string' ? data['at'] : null;
  const chain: AuditChainBreak = { ...found, revision: e.revision, event_id: e.id, type: e.type, at };
  problems.push(`Hash chain broken at revision ${e.revision} (${e.type}${at ? ` at ${at}` : ''}, event ${e.id}): ${reasonText[found.reason]}.`);
  return chain;
}

export function checkRevisions(events: RecordedEvent[], problems: string[], from = 0): void {
  const gaps: string[] = [];
  let expected = from;
  for (const e of events) {
    if (e.revision > expected) gaps.push(expected === e.revision - 1 ? `${expected}` : `${expected}–${e.revision - 1}`);
    expected = e.revision + 1;
  }
  if (gaps.length) problems.push(`The stream has no event at revision ${gaps.join(', ')}: events were deleted from the log.`);
  const foreign = events.filter((e) => !isLedgerEvent(e));
  if (foreign.length) {
    const named = foreign.slice(0, 5).map((e) => `${e.type} at revision ${e.revision}`);
    problems.push(`The stream holds ${foreign.length} event(s) that are not ledger events: ${named.join(', ')}.`);
  }
}

/** Every document of the account in a collection, in `sort` order (read page by page). */
async function allOf<T extends { account_id: string }>(reads: ReadStore, def: CollectionDef<T>, accountId: string, sort: keyof T & string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await reads.find(def, { account_id: accountId }, { sort: [[sort, 1]], limit: PAGE, cursor });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

async function storedBalances(reads: ReadStore, accountId: string): Promise<Map<string, UsageBalanceDoc>> {
  return new Map((await allOf(reads, usageBalances, accountId, 'period')).map((d) => [d.period, d]));
}

export function comparePeriods(expected: UsageBalanceDoc[], actual: Map<string, UsageBalanceDoc>, problems: string[]): PeriodAudit[] {
  const byPeriod = new Map(expected.map((d) => [d.period, d]));
  const periods = [...new Set([...byPeriod.keys(), ...actual.keys()])].sort();
  return periods.map((period) => {
    const e = byPeriod.get(period) ?? null;
    const a = actual.get(period) ?? null;
    let mismatches: FieldMismatch[];
    if (e && a) {
      mismatches = diffDocs(e, a);
      for (const m of mismatches) problems.push(`usage_balances ${period}: ${differences([m])}.`);
    } else if (e) {
      mismatches = [{ field: 'document', expected: 'present', actual: 'missing' }];
      problems.push(`usage_balances ${period}: no document, but the log has that month.`);
    } else {
      mismatches = [{ field: 'document', expected: 'missing', actual: 'present' }];
      problems.push(`usage_balances ${period}: a document exists, but the log has no such month.`);
    }
    return { period, expected: e, actual: a, mismatches };
  });
}

/** The account's usage read models as of one moment: read again while a commit changed them in between. */
async function readModelsOf(reads: ReadStore, accountId: string) {
  for (let attempt = 1; ; attempt++) {
    const running = await reads.get(ledgerStates, accountId);
    const balances = await storedBalances(reads, accountId);
    const entries = await allOf(reads, ledgerEntries, accountId, 'seq');
    const again = await reads.get(ledgerStates, accountId);
    if ((again?.seq ?? null) === (running?.seq ?? null) || attempt === 20) return { running: again, balances, entries };
  }
}

/** The stored entries against those the log gives, matched by the event's revision. */
export function compareEntries(stored: LedgerEntryDoc[], expected: LedgerEntryDoc[], problems: string[]): AuditReport['entries'] {
  const byRevision = new Map(expected.map((d) => [d.revision, d]));
  const seen = new Set<number>();
  const mismatches: EntryAudit[] = [];
  let differing = 0;
  const note = (m: EntryAudit, sentence: string) => {
    differing += 1;
    if (mismatches.length < ENTRY_MISMATCH_LIMIT) {
      mismatches.push(m);
      problems.push(sentence);
    }
  };
  for (const a of stored) {
    seen.add(a.revision);
    const e = byRevision.get(a.revision);
    if (!e) {
      note(
        { seq: a.seq, kind: a.kind, mismatches: [{ field: 'document', expected: 'missing', actual: 'present' }] },
        `ledger_entries seq ${a.seq} (${a.kind}, revision ${a.revision}) has no event in the log.`,
      );
      continue;
    }
    const diff = diffDocs(e, a);
    if (diff.length) {
      note({ seq: a.seq, kind: e.kind, mismatches: diff }, `ledger_entries seq ${a.seq} (${e.kind}, revision ${a.revision}): ${differences(diff)}.`);
    }
  }
  for (const e of expected) {
    if (seen.has(e.revision)) continue;
    note(
      { seq: e.seq, kind: e.kind, mismatches: [{ field: 'document', expected: 'present', actual: 'missing' }] },
      `ledger_entries seq ${e.seq} (${e.kind}, revision ${e.revision}): no entry, but the log has the event.`,
    );
  }
  if (differing > mismatches.length) problems.push(`… and ${differing - mismatches.length} more ledger_entries documents differ.`);
  const covered = (entries: LedgerEntryDoc[]) => entries.reduce((n, d) => n + d.events, 0);
  return { expected: covered(expected), actual: covered(stored), mismatches };
}

/** Replays `ledger-<accountId>` and checks its hash chain and the usage read models against it. */
export async function auditAccount(deps: AuditDeps & { accountId: string }): Promise<AuditReport> {
  const { events: store, reads, accountId } = deps;
  await reads.register(usageProjection.collections);
  // The read models first, then the log: the log holds at least what they applied (unless events
  // were cut from its end, which shows as read-model lines with no event).
  const stored = await readModelsOf(reads, accountId);
  const events = await store.readStream(ledgerStream(accountId));
  const problems: string[] = [];
  const chain = checkChain(events, problems);
  checkRevisions(events, problems);

  const running = stored.running;
  const applied = running?.seq ?? -1;
  const compared = events.filter((e) => e.revision <= applied);
  const notYetProjected = events.length - compared.length;
  const replay = replayUsage(accountId, compared);
  const periods = comparePeriods(replay.balances, stored.balances, problems);
  const entries = compareEntries(stored.entries, replay.entries, problems);

  if (running !== null) {
    const { state: s, ...rest } = running;
    const { state: expectedState, ...expectedRest } = replay.fold;
    const diff = [
      ...diffDocs(expectedRest, rest),
      ...diffDocs(expectedState, s).map((m) => ({ ...m, field: `state.${m.field}` })),
    ];
    if (diff.length) problems.push(`ledger_states (the usage projection's running state): ${differences(diff)}.`);
  }

  const snapshot = await checkSnapshot(reads, accountId, events, problems);
  const lastData = events.length ? (events[events.length - 1]!.data as Record<string, unknown> | null) : null;
  return {
    account_id: accountId,
    ok: problems.length === 0,
    events: events.length,
    last_hash: lastData && typeof lastData['hash'] === 'string' ? lastData['hash'] : null,
    periods,
    entries,
    chain,
    not_yet_projected: notYetProjected,
    snapshot,
    problems,
  };
}

/** The snapshot against the fold of the log up to its revision: never trusted, always compared. */
async function checkSnapshot(reads: ReadStore, accountId: string, events: RecordedEvent[], problems: string[]): Promise<AuditReport['snapshot']> {
  await reads.register([ledgerSnapshots]);
  const snapshot = await reads.get(ledgerSnapshots, accountId);
  if (!snapshot) return { status: 'none' };
  const upTo = events.filter((e) => e.revision <= snapshot.revision);
  const folded = foldLedger(upTo);
  const mismatches = upTo.length === snapshot.revision + 1 ? diffDocs(folded, snapshot.state) : [{ field: 'revision', expected: upTo.length - 1, actual: snapshot.revision }];
  if (mismatches.length === 0) return { status: 'ok', revision: snapshot.revision, mismatches };
  problems.push(
    `ledger snapshot at revision ${snapshot.revision}: ${differences(mismatches.map((m) => ({ ...m, field: m.field === 'revision' ? m.field : `state.${m.field}` })))}. ` +
      'The service starts its fold from it after a restart: drop it (it is a cache; the next one is taken from the log).',
  );
  return { status: 'differs', revision: snapshot.revision, mismatches };
}

/**
 * Audits every account the read models know: those with usage documents and those of the
 * `accounts` collection (api-keys projection), so an account whose ledger never reached the
 * usage read models is audited too.
 */
export async function auditAll(deps: AuditDeps): Promise<AuditAllReport> {
  const { reads } = deps;
  await reads.register([...usageProjection.collections, accounts]);
  const ids = new Set<string>();
  for await (const d of reads.scan(ledgerStates)) ids.add(d.account_id);
  for await (const d of reads.scan(usageBalances)) ids.add(d.account_id);
  for await (const d of reads.scan(accounts)) ids.add(d.account_id);
  const reports: AuditReport[] = [];
  for (const accountId of [...ids].sort()) reports.push(await auditAccount({ ...deps, accountId }));
  return { ok: reports.every((r) => r.ok), accounts: reports };
}

/** Human text: a one-line verdict, then every difference found. */
export function formatAuditReport(report: AuditReport): string {
  const months = `${report.periods.length} month${report.periods.length === 1 ? '' : 's'}`;
  const events = `${report.events} event${report.events === 1 ? '' : 's'}`;
  if (report.ok) {
    if (report.events === 0) return `Account ${report.account_id}: OK (no credit ledger).`;
    return (
      `Account ${report.account_id}: OK. ${events}, hash chain intact (last hash ${report.last_hash ?? '-'}), ` +
      `${months} and the ledger entries of ${report.entries.actual} events match the log.` +
      (report.not_yet_projected
        ? ` The last ${report.not_yet_projected} event${report.not_yet_projected === 1 ? ' is' : 's are'} not in the read models yet (the projector is catching up): chain checked, figures not compared.`
        : '')
    );
  }
  const problems = `${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`;
  const lines = [
    `Account ${report.account_id}: AUDIT FAILED. ${events}, ${months}, ${problems}:`,
    ...report.problems.map((p) => `  - ${p}`),
  ];
  return lines.join('\n');
}

/** Human text for `auditAll`: every account's verdict, then the totals. */
export function formatAuditSummary(all: AuditAllReport): string {
  const failed = all.accounts.filter((r) => !r.ok).length;
  const lines = all.accounts.map(formatAuditReport);
  lines.push(
    failed === 0
      ? `All ${all.accounts.length} account${all.accounts.length === 1 ? '' : 's'} pass.`
      : `${failed} of ${all.accounts.length} account${all.accounts.length === 1 ? '' : 's'} failed the audit.`,
  );
  return lines.join('\n');
}
