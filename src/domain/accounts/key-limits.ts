/**
 * What a key may do and spend (docs/accounts.md, "Key limits"): credits per UTC day and per UTC
 * month, an expiry, and a restriction to read-only calls or to a list of operations. A property of
 * the key, recorded on the account's stream (`ApiKeyIssued.limits`, `ApiKeyLimitsSet`); the meter
 * enforces the expiry and the restriction when it authenticates a call, and the ledger the credits
 * with the debit (src/domain/ledger/key-spend.ts).
 */
import { AppError, badRequest } from '../../core/errors.js';
import { RATE_CARD, RATE_KEYS, isRateKey, type RateKey } from '../rate-card.js';

export type KeyScope = 'all' | 'read_only';
export const KEY_SCOPES: readonly KeyScope[] = ['all', 'read_only'];

export interface KeyLimits {
  /** Credits the key may spend per UTC day; null: no daily limit. */
  daily_credit_limit: number | null;
  /** Credits the key may spend per UTC month; null: no monthly limit. */
  monthly_credit_limit: number | null;
  /** When the key stops working (ISO instant, UTC); null: never. */
  expires_at: string | null;
  /** `read_only`: GET calls only (no webhook or key changes). */
  scope: KeyScope;
  /** The operations (rate-card keys) the key may call; null: all that its scope allows. */
  operations: RateKey[] | null;
}

/** A key without limits: what keys issued before limits, and keys issued without any, have. */
export const NO_LIMITS: Readonly<KeyLimits> = Object.freeze({ daily_credit_limit: null, monthly_credit_limit: null, expires_at: null, scope: 'all', operations: null });

/** The largest credit limit a key may be given (well inside a safe integer once summed). */
export const MAX_KEY_CREDIT_LIMIT = 1_000_000_000;

/** The key's credit limits, as a debit carries them; null when it has none (the common case costs nothing). */
export function keyBudgetOf(limits: KeyLimits | null | undefined): { daily: number | null; monthly: number | null } | null {
  if (!limits || (limits.daily_credit_limit === null && limits.monthly_credit_limit === null)) return null;
  return { daily: limits.daily_credit_limit, monthly: limits.monthly_credit_limit };
}

/** Whether the key is bounded in any way (such a key may not change keys: it could lift its own bounds). */
export function isLimited(limits: KeyLimits | null | undefined): boolean {
  if (!limits) return false;
  return keyBudgetOf(limits) !== null || limits.expires_at !== null || limits.scope !== 'all' || limits.operations !== null;
}

/** Limits equal field by field (a change that changes nothing records nothing). */
export function sameLimits(a: KeyLimits, b: KeyLimits): boolean {
  const ops = (o: RateKey[] | null) => (o === null ? null : [...o].sort().join(','));
  return (
    a.daily_credit_limit === b.daily_credit_limit &&
    a.monthly_credit_limit === b.monthly_credit_limit &&
    a.expires_at === b.expires_at &&
    a.scope === b.scope &&
    ops(a.operations) === ops(b.operations)
  );
}

/** The rate-card key an operation names: a rate-card key itself, or the MCP tool that mirrors one. */
export function operationOf(name: string): RateKey | null {
  const n = name.trim();
  if (isRateKey(n)) return n;
  return RATE_KEYS.find((k) => RATE_CARD[k].mcp_tool === n) ?? null;
}

/** The changes asked for: a field absent stays as it is, null clears it (JSON merge patch). */
export interface KeyLimitsChange {
  daily_credit_limit?: number | null;
  monthly_credit_limit?: number | null;
  expires_at?: string | null;
  scope?: string;
  operations?: readonly string[] | null;
}

const creditLimit = (name: string, v: unknown): number | null => {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > MAX_KEY_CREDIT_LIMIT) {
    throw badRequest(`${name} is a whole number of credits from 1 to ${MAX_KEY_CREDIT_LIMIT.toLocaleString('en-US')}, or null for none`, { errors: [{ parameter: name, message: 'must be a whole number ≥ 1, or null' }] });
  }
  return v;
};

/** An instant in the future, as ISO UTC; a date-time without a zone is read as UTC. */
function expiry(v: unknown, now: Date): string | null {
  if (v === null) return null;
  const text = typeof v === 'string' ? v.trim() : '';
  const withZone = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text) ? `${text}Z` : text;
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(withZone) ? Date.parse(withZone) : NaN;
  if (!Number.isFinite(ms)) throw badRequest('expires_at is an ISO 8601 instant (2026-12-31T23:59:59Z), or null for none', { errors: [{ parameter: 'expires_at', message: 'must be an ISO 8601 instant, or null' }] });
  if (ms <= now.getTime()) throw badRequest('expires_at must be in the future (revoke a key to stop it now)', { errors: [{ parameter: 'expires_at', message: 'must be in the future' }] });
  return new Date(ms).toISOString();
}

function operations(v: readonly string[] | null | undefined): RateKey[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v) || v.length === 0) throw badRequest('operations lists at least one operation, or is null for all', { errors: [{ parameter: 'operations', message: 'must be a non-empty list, or null' }] });
  const keys = new Set<RateKey>();
  for (const name of v) {
    const key = typeof name === 'string' ? operationOf(name) : null;
    if (!key) throw badRequest(`Unknown operation ${JSON.stringify(name)}: name a rate-card key (GET /v1/usage lists them) or an MCP tool`, { errors: [{ parameter: 'operations', message: `unknown operation ${JSON.stringify(name)}` }] });
    keys.add(key);
  }
  return RATE_KEYS.filter((k) => keys.has(k));
}

/**
 * `current` with `change` applied, every field checked: credit limits whole numbers from 1, an
 * expiry in the future (by `now`, the wall clock), a known scope, known operations (rate-card keys
 * or MCP tool names, kept as rate-card keys in the rate card's order). 400 `bad_request` otherwise.
 */
export function applyLimits(current: KeyLimits, change: KeyLimitsChange, now: Date): KeyLimits {
  const next: KeyLimits = { ...current };
  if (change.daily_credit_limit !== undefined) next.daily_credit_limit = creditLimit('daily_credit_limit', change.daily_credit_limit);
  if (change.monthly_credit_limit !== undefined) next.monthly_credit_limit = creditLimit('monthly_credit_limit', change.monthly_credit_limit);
  if (change.expires_at !== undefined) next.expires_at = expiry(change.expires_at, now);
  if (change.scope !== undefined) {
    if (!(KEY_SCOPES as readonly string[]).includes(change.scope)) throw badRequest(`scope is ${KEY_SCOPES.join(' or ')}`, { errors: [{ parameter: 'scope', message: `must be ${KEY_SCOPES.join(' or ')}` }] });
    next.scope = change.scope as KeyScope;
  }
  if (change.operations !== undefined) next.operations = operations(change.operations);
  return next;
}

/** The limits an event carries (absent on keys issued before limits): always all five fields. */
export function limitsOf(recorded: Partial<KeyLimits> | undefined): KeyLimits {
  if (!recorded) return NO_LIMITS;
  return {
    daily_credit_limit: recorded.daily_credit_limit ?? null,
    monthly_credit_limit: recorded.monthly_credit_limit ?? null,
    expires_at: recorded.expires_at ?? null,
    scope: recorded.scope ?? 'all',
    operations: recorded.operations ?? null,
  };
}

/** 403 `key_expired` once the key's expiry has passed (on the wall clock `now`). */
export function requireUnexpired(limits: KeyLimits | null | undefined, prefix: string, now: Date): void {
  const at = limits?.expires_at;
  if (!at || Date.parse(at) > now.getTime()) return;
  throw new AppError('key_expired', `key ${prefix}… expired at ${at}; use another key of the account, or set a later expiry on the account page`, { expires_at: at });
}

/**
 * 403 `key_scope_forbidden` when the key may not make this call: a read-only key anything but a
 * GET, a key with a list of operations any other operation; a call that names no operation (none
 * of the rate card) is refused to a restricted key. Decided before anything is read or charged.
 */
export function requireKeyMayCall(limits: KeyLimits | null | undefined, endpoint: RateKey | undefined, method: string): void {
  if (!limits || (limits.scope === 'all' && limits.operations === null)) return;
  const readOnly = limits.scope === 'read_only' && method.toUpperCase() !== 'GET';
  const notListed = limits.operations !== null && (endpoint === undefined || !limits.operations.includes(endpoint));
  if (!readOnly && !notListed) return;
  const what = endpoint ? `${method.toUpperCase()} ${endpoint}` : `${method.toUpperCase()} on this path`;
  const why = readOnly ? 'it is read-only (GET calls only: no webhook or key changes)' : `it may call only ${limits.operations!.join(', ')}`;
  throw new AppError('key_scope_forbidden', `This key may not call ${what}: ${why}. Use a key without this restriction, or change it on the account page.`, {
    scope: limits.scope,
    operations: limits.operations,
    operation: endpoint ?? null,
  });
}

/**
 * 403 `key_scope_forbidden` for a key with any limit or restriction asked to change keys: it could
 * lift its own bounds (or another key's). Keys are changed with an unrestricted key, on the
 * account page or by the operator.
 */
export function requireKeyMayManageKeys(limits: KeyLimits | null | undefined): void {
  if (!isLimited(limits)) return;
  throw new AppError('key_scope_forbidden', 'This key has limits or restrictions, so it may not change keys (it could lift its own). Use a key without any, or the account page.', {
    scope: limits!.scope,
    operations: limits!.operations,
    operation: 'keys',
  });
}
