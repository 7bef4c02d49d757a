/**
 * `key_last_used`: when each API key last made a charged call, what the account page's keys table
 * shows as "Last used". Folded from the ledger's debits (one call or a batch of calls) that name
 * their key (`key_id`, recorded since keys had names; older debits name none and count for no key).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { ledgerAccountOf } from '../usage/usage.projection.js';

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

/** The keys a debit or a batch of debits names (a batch's calls share one instant). */
function keysOf(raw: RecordedEvent): unknown[] {
  const data = raw.data as { key_id?: unknown; calls?: { key_id?: unknown } } | null;
  if (raw.type === 'CreditsDebitedBatch') return Array.isArray(data?.calls?.key_id) ? (data.calls.key_id as unknown[]) : [];
  return [data?.key_id];
}

export const keyUsageProjection: Projection = {
  name: 'key-usage',
  collections: [keyLastUsed],
  eventTypes: ['CreditsDebited', 'CreditsDebitedBatch'],
  apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const accountId = ledgerAccountOf(raw.streamId);
    const at = (raw.data as { at?: unknown } | null)?.at;
    if (accountId === null || typeof at !== 'string') return Promise.resolve();
    // Events come in log order: the last one to name a key is its last use.
    for (const keyId of new Set(keysOf(raw))) {
      if (typeof keyId === 'string' && keyId !== '') ctx.upsert(keyLastUsed, { key_id: keyId, account_id: accountId, last_used_at: at });
    }
    return Promise.resolve();
  },
};
