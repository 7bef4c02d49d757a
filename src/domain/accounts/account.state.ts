/**
 * A developer account's state (its address, keys and rate override) and how each event changes it
 * (`evolveAccount`), with the account's first decision (`openAccount`): sign-in and the operator's
 * `keys create` both open an account in the same append as its ledger, and the account decider
 * (account.decider.ts) decides everything after.
 */
import { AppError } from '../../core/errors.js';
import type { AccountEvent } from './account.events.js';
import { defaultKeyName, keyNameOf } from './api-keys.js';
import { NO_LIMITS, limitsOf, sameLimits, type KeyLimits } from './key-limits.js';

export interface KeyState {
  key_id: string;
  prefix: string;
  /** What the account calls the key (see ApiKeyIssued for keys issued before names). */
  name: string;
  status: 'active' | 'revoked' | 'rotated';
  grace_until: string | null;
  /** For a rotated key: the key that replaced it. */
  replaced_by: string | null;
  /** What the key may spend and do (NO_LIMITS for a key without any). */
  limits: KeyLimits;
}

export interface AccountState {
  exists: boolean;
  account_id: string | null;
  email: string | null;
  keys: Map<string, KeyState>;
  /** The operator's rate override (absent: the plan's). */
  rate_limit: number | 'unlimited' | 'tier';
  /** When the account was forgotten (AccountForgotten); null while it lives. */
  forgotten_at: string | null;
}

export const initialAccountState = (): AccountState => ({ exists: false, account_id: null, email: null, keys: new Map(), rate_limit: 'tier', forgotten_at: null });


export function evolveAccount(state: AccountState, event: AccountEvent): AccountState {
  switch (event.type) {
    case 'AccountCreated':
      return { ...state, exists: true, account_id: event.data.account_id, email: event.data.email };
    case 'ApiKeyIssued': {
      const keys = new Map(state.keys);
      const name = event.data.name ?? defaultKeyName(state.keys.size + 1);
      keys.set(event.data.key_id, { key_id: event.data.key_id, prefix: event.data.prefix, name, status: 'active', grace_until: null, replaced_by: null, limits: limitsOf(event.data.limits) });
      return { ...state, keys };
    }
    case 'ApiKeyLimitsSet': {
      const k = state.keys.get(event.data.key_id);
      if (!k) return state;
      const keys = new Map(state.keys);
      keys.set(k.key_id, { ...k, limits: limitsOf(event.data) });
      return { ...state, keys };
    }
    case 'ApiKeyRevoked': {
      const keys = new Map(state.keys);
      const k = keys.get(event.data.key_id);
      if (k) keys.set(k.key_id, { ...k, status: 'revoked' });
      return { ...state, keys };
    }
    case 'ApiKeyRotated': {
      const keys = new Map(state.keys);
      const k = keys.get(event.data.key_id);
      if (k) keys.set(k.key_id, { ...k, status: 'rotated', grace_until: event.data.grace_until, replaced_by: event.data.replaced_by });
      return { ...state, keys };
    }
    case 'RateLimitSet':
      return { ...state, rate_limit: event.data.per_second };
    case 'AccountForgotten':
      return { ...state, forgotten_at: event.data.at };
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

/**
 * `AccountForgotten`, with the revocation of every key not revoked yet; nothing for an account
 * forgotten already (forgetting is retried until the key is destroyed, docs/ledger.md).
 */
export function forgetAccount(state: AccountState, now: Date): AccountEvent[] {
  if (!state.exists) throw new AppError('not_found', 'no such account');
  if (state.forgotten_at !== null) return [];
  const at = now.toISOString();
  const revoked: AccountEvent[] = [...state.keys.values()].filter((k) => k.status !== 'revoked').map((k) => ({ type: 'ApiKeyRevoked', data: { key_id: k.key_id, at } }));
  return [...revoked, { type: 'AccountForgotten', data: { account_id: state.account_id!, at } }];
}

/** The key material a new key is recorded with (the key itself is never stored), and the name and limits it was given, if any. */
export interface KeyMaterial {
  key_id: string;
  key_hash: string;
  prefix: string;
  name?: string;
  limits?: KeyLimits;
}

/**
 * The `ApiKeyIssued` data of a new key: its name as given, else `inherited` (a rotation's new key
 * keeps the name of the key it replaces), else the default for its place on the account. Every
 * new key's event carries a name. Limits likewise (a rotation must not free a bounded key of its
 * bounds): given, else inherited; none are recorded for a key without any.
 */
export function issuedKey(
  state: AccountState,
  key: KeyMaterial,
  at: string,
  inherited?: { name: string; limits: KeyLimits },
): Extract<AccountEvent, { type: 'ApiKeyIssued' }>['data'] {
  const name = keyNameOf(key.name) ?? inherited?.name ?? defaultKeyName(state.keys.size + 1);
  const limits = key.limits ?? inherited?.limits;
  const data = { key_id: key.key_id, key_hash: key.key_hash, prefix: key.prefix, name, at };
  return limits && !sameLimits(limits, NO_LIMITS) ? { ...data, limits } : data;
}

/** `AccountCreated` with its first key; 409 `conflict` for an account that exists. */
export function openAccount(state: AccountState, command: { account_id: string; email: string | null; key: KeyMaterial }, now: Date): AccountEvent[] {
  if (state.exists) throw new AppError('conflict', `account ${command.account_id} already exists`);
  const at = now.toISOString();
  return [
    { type: 'AccountCreated', data: { account_id: command.account_id, email: command.email, at } },
    { type: 'ApiKeyIssued', data: issuedKey(state, command.key, at) },
  ];
}
