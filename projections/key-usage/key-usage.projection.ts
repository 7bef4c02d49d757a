/**
 * `key_last_used`: when each API key last made a charged call, what the account page's keys table
 * shows as "Last used". Folded from the ledger's debits (one call or a batch of calls) by the keys
 * their metadata names (withCallKeys in src/domain/ledger/ledger.events.ts; debits written before
 * keys were kept, and the operator's, name none and count for no key).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { callKeysOf } from '../../src/domain/ledger/ledger.events.js';
import { ledgerAccountOf } from '../shared/ledger-streams.js';

export interface KeyLastUsedDoc {
  key_id: string;
  account_id: string;
  /** The instant of the key's last charged call. */
  last_used_at: string;
}

export const keyLastUsed = defineCollection<KeyLastUsedDoc>({
  name: 'key_last_used',
  key: (d) => d.key_id,
  fields: ['key_id', 'account_id'],
  indexes: [['account_id']],
});

export const keyUsageProjection: Projection = {
  name: 'key-usage',
  collections: [keyLastUsed],
  eventTypes: ['CreditsDebited', 'CreditsDebitedBatch'],
  apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const accountId = ledgerAccountOf(raw.streamId);
    const at = (raw.data as { at?: unknown } | null)?.at;
    if (accountId === null || typeof at !== 'string') return;
    // Events come in log order: the last one to name a key is its last use.
    for (const keyId of new Set(callKeysOf(raw))) ctx.upsert(keyLastUsed, { key_id: keyId, account_id: accountId, last_used_at: at });
  },
};
