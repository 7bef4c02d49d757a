/**
 * One month of an account's ledger as billing reads it: the month's events from the log (found
 * through `ledger_entries`, which knows the revision of the month's first event), up to its
 * closing event or, for a month still open, to the end of the stream, and the state the month
 * opened on. The invoice issuer bills a closed month from it, the upcoming invoice an open one.
 */
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { foldLedger, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { ledgerEntries, usageProjection } from './usage.projection.js';

export interface LedgerMonth {
  /** The state before the month's first event. */
  before: LedgerState;
  /** The month's events, in order: up to its `LedgerPeriodClosed` when `closed`, else all so far. */
  events: LedgerEvent[];
  closed: boolean;
  /** The ledger line number (`seq`) of the month's first line. */
  firstSeq: number;
}

const PAGE = 5_000;

const isClosing = (e: RecordedEvent, period: string) => e.type === 'LedgerPeriodClosed' && (e.data as { period?: unknown }).period === period;

/** The month `period` of the account's ledger; null when the ledger has no event in it yet. */
export async function readLedgerMonth(reads: ReadStore, events: EventStore, accountId: string, period: string): Promise<LedgerMonth | null> {
  await reads.register(usageProjection.collections);
  const first = (await reads.find(ledgerEntries, { account_id: accountId, period }, { sort: [['seq', 1]], limit: 1 })).items[0];
  if (!first) return null;
  const stream = ledgerStream(accountId);
  const month: RecordedEvent[] = [];
  let closed = false;
  for (let from = first.revision; ; from += PAGE) {
    const page = await events.readStream(stream, { fromRevision: from, maxCount: PAGE });
    const end = page.findIndex((e) => isClosing(e, period));
    month.push(...(end >= 0 ? page.slice(0, end + 1) : page));
    closed = end >= 0;
    if (closed || page.length < PAGE) break;
  }
  // The state the month opened on: the previous month's closing event carries it whole.
  const [previous] = first.revision > 0 ? await events.readStream(stream, { fromRevision: first.revision - 1, maxCount: 1 }) : [];
  const before =
    previous === undefined
      ? initialLedgerState
      : previous.type === 'LedgerPeriodClosed'
        ? foldLedger([previous])
        : foldLedger(await events.readStream(stream, { maxCount: first.revision }));
  return { before, events: month as unknown as LedgerEvent[], closed, firstSeq: first.seq };
}
