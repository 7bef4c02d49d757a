/**
 * The upcoming invoice: what the month open at `now` would be billed if it closed now (plan and
 * membership, prorations, packs, overage so far). It is `billSoFar`, the function the invoice
 * issuer bills a closed month with, on the same events: the month's ledger so far, plus what a
 * decision at `now` would record first (a new month opened, a scheduled change applied).
 */
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { billSoFar, type MonthBill } from '../../src/domain/billing/month-bill.js';
import { nextPeriodStart, periodOf } from '../../src/domain/ledger/billing-period.js';
import { advanceTo, recorder } from '../../src/domain/ledger/ledger.recorder.js';
import { foldLedger, initialLedgerState } from '../../src/domain/ledger/ledger.state.js';
import { readLedgerMonth } from '../../projections/usage/ledger-month.js';
import { ledgerStates, usageProjection } from '../../projections/usage/usage.projection.js';

export interface UpcomingInvoice extends MonthBill {
  /** The instant the figures stand at. */
  as_of: string;
  /** When the month closes and its invoice is issued (the next month's first instant). */
  closes_at: string;
}

/** The upcoming invoice of the account's month at `now`. Read after the ledger read model caught up with the account. */
export async function getUpcomingInvoice(reads: ReadStore, events: EventStore, accountId: string, now: Date): Promise<UpcomingInvoice> {
  const period = periodOf(now);
  const month = await readLedgerMonth(reads, events, accountId, period);
  let before = month?.before;
  if (!before) {
    // No event in the month yet: it starts from the account's state as the ledger left it.
    await reads.register(usageProjection.collections);
    before = (await reads.get(ledgerStates, accountId))?.state ?? initialLedgerState;
  }
  const recorded = month?.events ?? [];
  const due = recorder(foldLedger(recorded, before), now.toISOString());
  advanceTo(due, now);
  const bill = billSoFar(period, before, [...recorded, ...due.events]);
  return { ...bill, as_of: now.toISOString(), closes_at: nextPeriodStart(now) };
}
