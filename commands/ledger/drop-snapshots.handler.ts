import type { ReadStore } from '../../src/core/read-store.port.js';
import { ledgerSnapshots } from '../../src/domain/ledger/ledger-snapshot.js';

/**
 * `scores ledger drop-snapshot`: drops the ledger snapshot of one account (or of every account),
 * e.g. one the audit found to differ from the log. A snapshot is a cache: without it the next
 * cold start of the account folds its stream from the start, and a new snapshot is taken from the
 * log 250 events later. A running server keeps the state it already holds in memory: the drop
 * matters at its next start. Returns how many snapshots were dropped.
 */
export async function dropLedgerSnapshots(reads: ReadStore, accountId: string | null): Promise<number> {
  await reads.register([ledgerSnapshots]);
  if (accountId !== null) {
    if (!(await reads.get(ledgerSnapshots, accountId))) return 0;
    await reads.commit({ writes: [{ op: 'delete', collection: ledgerSnapshots.name, id: accountId }], checkpoints: {} });
    return 1;
  }
  let count = 0;
  for await (const _ of reads.scan(ledgerSnapshots)) count++;
  await reads.reset([ledgerSnapshots.name], []);
  return count;
}
