/** Account and key events. One stream per account: `account-<account_id>`. */
import type { KeyLimits } from './key-limits.js';

export interface AccountCreated {
  type: 'AccountCreated';
  /** `email` sealed under the account's key (`pii:v1:…`, src/core/personal-data.port.ts); in clear in events written before. */
  data: { account_id: string; email: string | null; at: string };
}
/**
 * The account was forgotten (`scores accounts forget`, or its owner's "Delete my account"): its
 * keys were revoked in the same append, and its personal-data key is destroyed right after, so
 * what was sealed for it never opens again. Its ledger, invoices and figures stay, under its id.
 */
export interface AccountForgotten {
  type: 'AccountForgotten';
  data: { account_id: string; at: string };
}
export interface ApiKeyIssued {
  type: 'ApiKeyIssued';
  /**
   * Only the SHA-256 of the key is kept, with a short clear prefix to tell keys apart. `name`: what
   * the account calls the key; absent from events written before keys had names, which read as
   * `Key <n>`, n the key's place among the account's keys (defaultKeyName). `limits`: what the key
   * may spend and do (key-limits.ts), when it was issued with any; absent: none.
   */
  data: { key_id: string; key_hash: string; prefix: string; name?: string; limits?: KeyLimits; at: string };
}
export interface ApiKeyRevoked {
  type: 'ApiKeyRevoked';
  /**
   * `grace_ended_by`: set when the key was a rotated key in its grace period, revoked because the
   * key that replaced it (`grace_ended_by`, or a later key in its chain) was revoked or rotated.
   */
  data: { key_id: string; at: string; grace_ended_by?: string };
}
export interface ApiKeyRotated {
  type: 'ApiKeyRotated';
  /** The old key keeps working until `grace_until` (= `at` for an immediate rotation). */
  data: { key_id: string; replaced_by: string; grace_until: string; at: string };
}
/**
 * The operator's override of the account's request rate (`scores rate-limit set`): requests per
 * second shared by all the account's keys, `unlimited`, or `tier` (back to the plan's own, src/domain/plans.ts).
 */
export interface RateLimitSet {
  type: 'RateLimitSet';
  data: { per_second: number | 'unlimited' | 'tier'; at: string };
}
/** A key's limits changed (the account page, `scores keys limits`, `PATCH /v1/keys/{key_id}`): all five fields, as they now are. */
export interface ApiKeyLimitsSet {
  type: 'ApiKeyLimitsSet';
  data: { key_id: string; at: string } & KeyLimits;
}
export type AccountEvent = AccountCreated | ApiKeyIssued | ApiKeyRevoked | ApiKeyRotated | ApiKeyLimitsSet | RateLimitSet | AccountForgotten;

export const accountStream = (accountId: string) => `account-${accountId}`;
