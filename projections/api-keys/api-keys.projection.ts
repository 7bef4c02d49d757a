import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { AccountEvent } from '../../src/domain/accounts/account.events.js';
import { limitsOf, type KeyLimits } from '../../src/domain/accounts/key-limits.js';
import { accounts } from '../shared/accounts.js';

/** One document per key, found by the SHA-256 of the key the client sends. */
export interface ApiKeyDoc {
  key_hash: string;
  key_id: string;
  account_id: string;
  prefix: string;
  status: 'active' | 'revoked' | 'rotated';
  /** For a rotated key: it keeps working until this instant. */
  grace_until: string | null;
  created_at: string;
  /** What the key may spend and do; absent for a key without limits (and in documents written before limits). */
  limits?: KeyLimits;
}

export const apiKeys = defineCollection<ApiKeyDoc>({
  name: 'api_keys',
  key: (k) => k.key_hash,
  fields: ['key_id', 'account_id'],
  indexes: [['key_id'], ['account_id']],
});

/** key_id → key_hash, so a revocation can find its key inside one projection batch. */
export const keyIndex = defineCollection<{ key_id: string; key_hash: string; account_id: string }>({
  name: 'api_key_ids',
  key: (k) => k.key_id,
  fields: ['key_id'],
  indexes: [],
});

export const apiKeysProjection: Projection = {
  name: 'api-keys',
  collections: [apiKeys, accounts, keyIndex],
  eventTypes: ['AccountCreated', 'ApiKeyIssued', 'ApiKeyRevoked', 'ApiKeyRotated', 'ApiKeyLimitsSet', 'RateLimitSet', 'AccountForgotten'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as AccountEvent;
    const accountId = raw.streamId.replace(/^account-/, '');
    switch (event.type) {
      case 'AccountCreated':
        ctx.upsert(accounts, { account_id: event.data.account_id, email: event.data.email, created_at: event.data.at });
        return;
      case 'AccountForgotten': {
        // The sealed address no longer opens; the read model drops it too.
        const account = await ctx.get(accounts, accountId);
        if (account) ctx.upsert(accounts, { ...account, email: null });
        return;
      }
      case 'RateLimitSet': {
        const account = await ctx.get(accounts, accountId);
        if (account) ctx.upsert(accounts, { ...account, rate_limit: event.data.per_second });
        return;
      }
      case 'ApiKeyIssued':
        ctx.upsert(apiKeys, {
          key_hash: event.data.key_hash,
          key_id: event.data.key_id,
          account_id: accountId,
          prefix: event.data.prefix,
          status: 'active',
          grace_until: null,
          created_at: event.data.at,
          ...(event.data.limits ? { limits: limitsOf(event.data.limits) } : {}),
        });
        ctx.upsert(keyIndex, { key_id: event.data.key_id, key_hash: event.data.key_hash, account_id: accountId });
        return;
      case 'ApiKeyLimitsSet': {
        const found = await byKeyId(ctx, event.data.key_id, accountId);
        if (found) ctx.upsert(apiKeys, { ...found, limits: limitsOf(event.data) });
        return;
      }
      case 'ApiKeyRevoked':
      case 'ApiKeyRotated': {
        const found = await byKeyId(ctx, event.data.key_id, accountId);
        if (!found) return;
        ctx.upsert(
          apiKeys,
          event.type === 'ApiKeyRevoked'
            ? { ...found, status: 'revoked' }
            : { ...found, status: 'rotated', grace_until: event.data.grace_until },
        );
        return;
      }
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};

/** Keys are stored by hash; revocations name the key id. Ids embed nothing secret. */
async function byKeyId(ctx: ProjectionContext, keyId: string, accountId: string): Promise<ApiKeyDoc | null> {
  const idx = await ctx.get(keyIndex, keyId);
  if (!idx || idx.account_id !== accountId) return null;
  return ctx.get(apiKeys, idx.key_hash);
}
