/**
 * A snapshot of an account's ledger state: a cache of the fold of its stream up to `revision`, so
 * that the first decision after a restart reads the snapshot and the events after it, not the
 * whole history. It is anchored to the log by the hash of the event at `revision` (the state's
 * `last_hash`): one that does not match the log is ignored. It may be dropped at any time; the
 * audit never trusts it, and reports one that differs from the fold.
 */
import { defineCollection } from '../../core/read-store.port.js';
import type { LedgerState } from './ledger.state.js';
import type { KeySpend } from './key-spend.js';

export interface LedgerSnapshot {
  account_id: string;
  /** The stream revision the state includes (the last event folded). */
  revision: number;
  /** That event's global position. */
  position: string;
  state: LedgerState;
  /**
   * What each key spent in the day and month of the state (key-spend.ts), folded beside it; absent
   * in snapshots written before key limits, which are not used (the stream is folded whole once).
   */
  key_spend?: KeySpend;
}

export const ledgerSnapshots = defineCollection<LedgerSnapshot>({
  name: 'ledger_snapshots',
  key: (s) => s.account_id,
  fields: [],
  indexes: [],
});

/** A snapshot is taken once this many events were appended since the last one. */
export const SNAPSHOT_EVERY = 250;
