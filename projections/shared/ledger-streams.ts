import { LEDGER_STREAM_PREFIX } from '../../src/domain/ledger/ledger.events.js';

/** The account a ledger stream belongs to, or null for any other stream. */
export function ledgerAccountOf(streamId: string): string | null {
  return streamId.startsWith(LEDGER_STREAM_PREFIX) && streamId.length > LEDGER_STREAM_PREFIX.length
    ? streamId.slice(LEDGER_STREAM_PREFIX.length)
    : null;
}
