/**
 * One month of an account's ledger: its audit from its opening state (`scores audit --month`) and
 * its export for an auditor (`scores ledger export`), both in time proportional to the month.
 */
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { computeHash, GENESIS_HASH, ledgerStream, lineCount } from '../../src/domain/ledger/ledger.events.js';
import {
  balanceKey,
  ledgerEntries,
  ledgerStates,
  replayUsage,
  addEntry,
  startFold,
  usageBalances,
  usageProjection,
  usageStep,
  type LedgerEntryDoc,
  type UsageBalanceDoc,
} from '../../projections/usage/usage.projection.js';
import { eventLines, type LedgerEntryResponse } from '../shared/ledger-lines.js';
import {
  PAGE,
  checkChain,
  checkRevisions,
  compareEntries,
  comparePeriods,
  type AuditChainBreak,
  type AuditDeps,
  type AuditReport,
  type PeriodAudit,
} from './audit-ledger.query.js';

/**
 * The account's first ledger entry in `month` (its first line's seq and its event's revision),
 * found through the `ledger_entries` index (a read model: whoever uses it checks the log around
 * it), or null when the month has none.
 */
async function firstEntryOf(reads: ReadStore, accountId: string, month: string): Promise<LedgerEntryDoc | null> {
  await reads.register(usageProjection.collections);
  const page = await reads.find(ledgerEntries, { account_id: accountId, period: month }, { sort: [['seq', 1]], limit: 1 });
  return page.items[0] ?? null;
}

export interface MonthAuditReport {
  account_id: string;
  month: string;
  ok: boolean;
  /**
   * Where the month's replay starts: the previous month's closing event (its carried state and
   * hash), the stream's start, or, for a month before the ledger recorded closings, the fold of
   * every earlier event.
   */
  opening: { from: 'closing_event' | 'stream_start' | 'earlier_events'; revision: number; hash: string };
  /** The month's events, from its first to its own closing event (or the stream's end). */
  events: number;
  /** Revision of the month's first event in the stream. */
  first_revision: number | null;
  /** Ledger lines of the month's events (a batch of calls is a line per call). */
  lines: number;
  last_hash: string | null;
  chain: AuditChainBreak | null;
  period: PeriodAudit | null;
  entries: AuditReport['entries'];
  not_yet_projected: number;
  problems: string[];
}

/** Events read a statement while a month is replayed. */
const MONTH_PAGE = 10_000;

/**
 * `scores audit --account A --month M`: one month, from its opening state, in time proportional
 * to the month's events. The month's first seq comes from the ledger_entries index (a read
 * model, so it is checked: the event before it must be the previous month's closing event, whose
 * own hash must hold); its events are read up to and including its own closing event; the chain
 * is verified from the opening hash; the month's figures and ledger lines are recomputed and
 * compared with the read models, as the whole-ledger audit does.
 */
export async function auditMonth(deps: AuditDeps & { accountId: string; month: string }): Promise<MonthAuditReport> {
  const { events: store, reads, accountId, month } = deps;
  await reads.register(usageProjection.collections);
  const streamId = ledgerStream(accountId);
  const problems: string[] = [];
  const firstEntry = await firstEntryOf(reads, accountId, month);
  const empty = { expected: 0, actual: 0, mismatches: [] };
  if (firstEntry === null) {
    return { account_id: accountId, month, ok: true, opening: { from: 'stream_start', revision: -1, hash: GENESIS_HASH }, events: 0, first_revision: null, lines: 0, last_hash: null, chain: null, period: null, entries: empty, not_yet_projected: 0, problems };
  }
  const first = firstEntry.revision;

  // The opening state.
  let fold = startFold(accountId);
  let opening: MonthAuditReport['opening'] = { from: 'stream_start', revision: -1, hash: GENESIS_HASH };
  if (first > 0) {
    const [before] = await store.readStream(streamId, { fromRevision: first - 1, maxCount: 1 });
    if (before?.type === 'LedgerPeriodClosed' && before.revision === first - 1) {
      const data = before.data as { hash?: unknown; prev_hash: string };
      if (computeHash(before.type, data) !== data.hash) problems.push(`The closing event at revision ${before.revision} does not match its hash: the month's opening state cannot be trusted.`);
      // The running fold as the projection has it there: the month's lines are numbered from the entry's seq.
      fold = { ...fold, seq: before.revision, lines: firstEntry.seq, state: foldLedger([before]) };
      opening = { from: 'closing_event', revision: before.revision, hash: String(data.hash) };
    } else {
      // A month before the ledger recorded closings: its opening state is the fold of everything before it.
      const earlier = await store.readStream(streamId, { maxCount: first });
      checkChain(earlier, problems);
      checkRevisions(earlier, problems);
      fold = replayUsage(accountId, earlier).fold;
      opening = { from: 'earlier_events', revision: first - 1, hash: fold.state.last_hash };
    }
  }

  const events = await monthEvents(store, streamId, first, month);
  const chain = checkChain(events, problems, opening.hash);
  checkRevisions(events, problems, first);

  // The figures and lines, for the events the read models have applied.
  const applied = (await reads.get(ledgerStates, accountId))?.seq ?? -1;
  let expectedBalance: UsageBalanceDoc | null = null;
  const expectedEntries: LedgerEntryDoc[] = [];
  let compared = 0;
  for (const e of events) {
    if (e.revision > applied) break;
    const step = usageStep(fold, e, e.revision);
    fold = step.fold;
    compared++;
    if (step.balance?.period === month) expectedBalance = step.balance;
    if (step.entry) addEntry(expectedEntries, step.entry);
  }
  const storedEntries: LedgerEntryDoc[] = [];
  for (let cursor: string | null = null; ; ) {
    const page: Page<LedgerEntryDoc> = await reads.find(ledgerEntries, { account_id: accountId, period: month }, { sort: [['seq', 1]], limit: PAGE, cursor });
    for (const entry of page.items) if (entry.revision <= applied) storedEntries.push(entry);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const storedBalance = await reads.get(usageBalances, balanceKey(accountId, month));
  const [period] = comparePeriods(expectedBalance ? [expectedBalance] : [], new Map(storedBalance ? [[month, storedBalance]] : []), problems);
  const entries = compareEntries(storedEntries, expectedEntries, problems);
  const lastData = events.length ? (events[events.length - 1]!.data as Record<string, unknown> | null) : null;
  return {
    account_id: accountId,
    month,
    ok: problems.length === 0,
    opening,
    events: events.length,
    first_revision: first,
    lines: events.reduce((n, e) => n + lineCount(e), 0),
    last_hash: lastData && typeof lastData['hash'] === 'string' ? lastData['hash'] : null,
    chain,
    period: period ?? null,
    entries,
    not_yet_projected: events.length - compared,
    problems,
  };
}

/** A month's events: from its first (`fromSeq`) up to and including its own closing event, or to the stream's end. */
async function monthEvents(store: EventStore, streamId: string, fromSeq: number, month: string): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for (let from = fromSeq; ; from += MONTH_PAGE) {
    const page = await store.readStream(streamId, { fromRevision: from, maxCount: MONTH_PAGE });
    const end = page.findIndex((e) => e.type === 'LedgerPeriodClosed' && (e.data as { period?: unknown }).period === month);
    events.push(...(end >= 0 ? page.slice(0, end + 1) : page));
    if (end >= 0 || page.length < MONTH_PAGE) return events;
  }
}

/** One line of `scores ledger export`: an entry as `/v1/usage/ledger` shows it, with the data exactly as hashed. */
export type ExportedLedgerLine = Pick<LedgerEntryResponse, 'seq' | 'kind' | 'at' | 'period' | 'prev_hash' | 'hash' | 'data'>;

/**
 * `scores ledger export --account A [--month M]`: the month's ledger lines (or the whole
 * ledger's) from the log, oldest first, as `/v1/usage/ledger` shows them (a batch of calls a line
 * per call). A month's first `prev_hash` is the previous month's last `hash`: verify the file with
 * the recipe in docs/ledger.md from that hash.
 */
export async function exportLedger(deps: AuditDeps & { accountId: string; month?: string }): Promise<ExportedLedgerLine[]> {
  const { events: store, reads, accountId, month } = deps;
  const streamId = ledgerStream(accountId);
  let events: RecordedEvent[];
  let fold = startFold(accountId);
  if (month === undefined) events = await store.readStream(streamId);
  else {
    const first = await firstEntryOf(reads, accountId, month);
    events = first === null ? [] : await monthEvents(store, streamId, first.revision, month);
    if (first !== null) fold = { ...fold, lines: first.seq };
  }
  const out: ExportedLedgerLine[] = [];
  for (const e of events) {
    const { entry, fold: next, seq } = usageStep(fold, e, e.revision);
    fold = next;
    if (!entry) continue;
    for (const line of eventLines(seq, entry.period, e)) {
      out.push({ seq: line.seq, kind: line.kind, at: line.at, period: line.period, prev_hash: line.prev_hash, hash: line.hash, data: line.data });
    }
  }
  return out;
}

/** Human text of a month's audit. */
export function formatMonthAudit(r: MonthAuditReport): string {
  if (r.events === 0) return `Account ${r.account_id}, ${r.month}: no ledger entries in that month.`;
  const opening =
    r.opening.from === 'closing_event'
      ? `from the previous month's closing event (revision ${r.opening.revision})`
      : r.opening.from === 'stream_start'
        ? 'from the start of the ledger'
        : `from the fold of the ${r.opening.revision + 1} earlier events (the month predates closing events)`;
  const head = `Account ${r.account_id}, ${r.month}: ${r.ok ? 'OK' : 'PROBLEMS'}. ${r.events} events (revisions ${r.first_revision}–${r.first_revision! + r.events - 1}, ${r.lines} ledger lines) replayed ${opening}; last hash ${r.last_hash ?? '-'}.`;
  return r.ok ? head : [head, ...r.problems.map((p) => `  - ${p}`)].join('\n');
}

