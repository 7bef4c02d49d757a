/**
 * Personal data in events, sealed under a key of the account it belongs to (docs/ledger.md,
 * "Forgetting an account"): an email address or a webhook's signing secret is written to the log
 * only sealed, and opened where it is shown or used. Forgetting the account destroys its key: the
 * log keeps every event, hash and figure, and no longer yields what was sealed.
 * Implementation: `src/core/account-key-vault.ts`, keys kept by an `AccountKeyStore`.
 */
export type PersonalField = 'email' | 'webhook-secret';

export interface PersonalData {
  /** `plain` sealed for `field` of `accountId` (its key made on first use). Throws AccountForgottenError for a forgotten account. */
  seal(accountId: string, plain: string, field: PersonalField): Promise<string>;
  /**
   * What `value` holds: null when the account was forgotten. A value that was never sealed this
   * way (written before) is given back as the data-key box opens it, or as it is.
   */
  open(accountId: string, value: string, field: PersonalField): Promise<string | null>;
  /** Destroys the account's key for ever: what it sealed never opens again, and nothing is sealed for it again. */
  forget(accountId: string): Promise<void>;
}

/** Where each account's key is kept, wrapped under the data key, apart from the log so that destroying it is possible. */
export type StoredAccountKey = { wrapped: string; forgotten_at: null } | { wrapped: null; forgotten_at: string };

export interface AccountKeyStore {
  find(accountId: string): Promise<StoredAccountKey | null>;
  /** Keeps `wrapped` as the account's key unless the store has a row for it already; answers the row it holds after. */
  create(accountId: string, wrapped: string, at: string): Promise<StoredAccountKey>;
  /** Replaces the account's key by a tombstone dated `at` (kept when it is one already). */
  destroy(accountId: string, at: string): Promise<void>;
  close(): Promise<void>;
}

export class AccountForgottenError extends Error {
  constructor(readonly accountId: string) {
    super(`account ${accountId} was forgotten: nothing is sealed for it any more`);
  }
}
