import type { ReadStore } from '../../src/core/read-store.port.js';
import { keyLastUsed, keyUsageProjection } from '../../projections/key-usage/key-usage.projection.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../../src/domain/accounts/api-keys.js';

/** An account's keys that made a charged call, key id → the instant of the last one: the account page's "Last used". */
export async function keysLastUsed(reads: ReadStore, accountId: string): Promise<Map<string, string>> {
  await reads.register(keyUsageProjection.collections);
  // Every key an account ever had: its active keys, and those rotated or revoked before them (a generous bound).
  const used = await reads.find(keyLastUsed, { account_id: accountId }, { limit: MAX_ACTIVE_KEYS_PER_ACCOUNT * 50 });
  return new Map(used.items.map((d) => [d.key_id, d.last_used_at]));
}
