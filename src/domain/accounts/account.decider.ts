/**
 * The account's decisions after it was opened: keys issued, revoked and rotated, the operator's
 * rate override. State and `evolve` are the kernel's (src/domain/accounts/account.state.ts).
 */
import type { Decider } from '../../core/decider.js';
import { AppError, notFound } from '../../core/errors.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from './api-keys.js';
import { applyLimits, sameLimits, type KeyLimitsChange } from './key-limits.js';
import type { AccountEvent, ApiKeyRevoked } from './account.events.js';
import { evolveAccount, forgetAccount, initialAccountState, issuedKey, openAccount, type AccountState, type KeyMaterial } from './account.state.js';

export type AccountCommand =
  | { type: 'CreateAccount'; account_id: string; email: string | null; key: KeyMaterial }
  | { type: 'IssueKey'; key: KeyMaterial }
  | { type: 'RevokeKey'; key_id: string }
  | { type: 'RotateKey'; key_id: string; grace_seconds: number; key: KeyMaterial }
  /** `change` applied to the key's limits as they are when decided (`now`: the wall clock, which an expiry is checked on). */
  | { type: 'SetKeyLimits'; key_id: string; change: KeyLimitsChange }
  | { type: 'SetRateLimit'; per_second: number | 'unlimited' | 'tier' }
  | { type: 'ForgetAccount' };

/**
 * Revocations of the keys rotated into `keyId` (directly or through a chain of rotations) whose
 * grace still runs: revoking or rotating a key ends its predecessors' grace, so an old key never
 * outlives the key that replaced it.
 */
function endGraceBefore(state: AccountState, keyId: string, now: Date): ApiKeyRevoked[] {
  const at = now.toISOString();
  const out: ApiKeyRevoked[] = [];
  let successors = new Set([keyId]);
  while (successors.size > 0) {
    const predecessors = [...state.keys.values()].filter((k) => k.status === 'rotated' && k.replaced_by !== null && successors.has(k.replaced_by));
    for (const p of predecessors) {
      if (p.grace_until !== null && p.grace_until > at) out.push({ type: 'ApiKeyRevoked', data: { key_id: p.key_id, at, grace_ended_by: keyId } });
    }
    successors = new Set(predecessors.map((p) => p.key_id));
  }
  return out;
}

/** Pure: what the command changes in the account, or why it cannot. */
function decide(state: AccountState, command: AccountCommand, now: Date): AccountEvent[] {
  const at = now.toISOString();
  if (!state.exists && command.type !== 'CreateAccount') throw notFound('no such account');
  if (state.forgotten_at !== null && command.type !== 'ForgetAccount') throw notFound('this account was forgotten');
  switch (command.type) {
    case 'ForgetAccount':
      return forgetAccount(state, now);
    case 'CreateAccount':
      return openAccount(state, command, now);
    case 'IssueKey': {
      if (!state.exists) throw notFound('no such account');
      const active = [...state.keys.values()].filter((k) => k.status === 'active').length;
      if (active >= MAX_ACTIVE_KEYS_PER_ACCOUNT) {
        throw new AppError('limit_exceeded', `an account has at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys (this one has ${active}); revoke one to create another`, {
          maximum: MAX_ACTIVE_KEYS_PER_ACCOUNT,
        });
      }
      return [{ type: 'ApiKeyIssued', data: issuedKey(state, command.key, at) }];
    }
    case 'RevokeKey': {
      const k = state.keys.get(command.key_id);
      if (!k) throw notFound(`no key ${command.key_id} on this account`);
      if (k.status === 'revoked') return [];
      return [{ type: 'ApiKeyRevoked', data: { key_id: k.key_id, at } }, ...endGraceBefore(state, k.key_id, now)];
    }
    case 'RotateKey': {
      const k = state.keys.get(command.key_id);
      if (!k) throw notFound(`no key ${command.key_id} on this account`);
      if (k.status !== 'active') throw new AppError('conflict', `key ${command.key_id} is ${k.status}; only an active key can be rotated`);
      if (!Number.isInteger(command.grace_seconds) || command.grace_seconds < 0) {
        throw new AppError('bad_request', 'grace period must be a whole number of seconds, 0 or more');
      }
      const grace_until = new Date(now.getTime() + command.grace_seconds * 1000).toISOString();
      return [
        { type: 'ApiKeyIssued', data: issuedKey(state, command.key, at, k) },
        { type: 'ApiKeyRotated', data: { key_id: k.key_id, replaced_by: command.key.key_id, grace_until, at } },
        ...endGraceBefore(state, k.key_id, now),
      ];
    }
    case 'SetKeyLimits': {
      const k = state.keys.get(command.key_id);
      if (!k) throw notFound(`no key ${command.key_id} on this account`);
      if (k.status === 'revoked') throw new AppError('conflict', `key ${command.key_id} is revoked; its limits no longer matter`);
      const limits = applyLimits(k.limits, command.change, now);
      if (sameLimits(k.limits, limits)) return [];
      return [{ type: 'ApiKeyLimitsSet', data: { key_id: k.key_id, at, ...limits } }];
    }
    case 'SetRateLimit': {
      const v = command.per_second;
      if (v !== 'unlimited' && v !== 'tier' && !(Number.isInteger(v) && v >= 1 && v <= 1_000_000)) {
        throw new AppError('bad_request', 'the rate is a whole number of requests per second from 1 to 1,000,000, unlimited, or tier');
      }
      if (!state.exists) throw notFound('no such account');
      if (v === state.rate_limit) return [];
      return [{ type: 'RateLimitSet', data: { per_second: v, at } }];
    }
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export const accountDecider = { initialState: initialAccountState, evolve: evolveAccount, decide } satisfies Decider<AccountState, AccountCommand, AccountEvent>;
