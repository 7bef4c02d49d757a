import { randomBytes } from 'node:crypto';
import { gcmOpen, gcmSeal } from './aes-gcm.js';
import type { Clock } from './clock.js';
import { SecretUnreadableError } from './aes-gcm-secret-box.js';
import type { SecretBox } from './secret-box.port.js';
import { AccountForgottenError, type AccountKeyStore, type PersonalData, type PersonalField } from './personal-data.port.js';

const KEY_BYTES = 32;
/** `pii:v1:<base64url of iv, ciphertext, tag>`; the account and the field are the authenticated data. */
const PREFIX = 'pii:v1:';

/**
 * Crypto-shredding: one random AES-256-GCM key per account, kept wrapped under the data key (the
 * SecretBox) in an AccountKeyStore. Keys are read from the store at every use, never cached: once
 * `forget` returns, no process of the fleet opens the account's data again.
 */
export class AccountKeyVault implements PersonalData {
  constructor(
    private readonly keys: AccountKeyStore,
    private readonly wrapper: SecretBox,
    private readonly clock: Clock,
  ) {}

  async seal(accountId: string, plain: string, field: PersonalField): Promise<string> {
    const key = await this.keyOf(accountId, true);
    if (key === null) throw new AccountForgottenError(accountId);
    return PREFIX + gcmSeal(key, plain, aad(accountId, field)).toString('base64url');
  }

  async open(accountId: string, value: string, field: PersonalField): Promise<string | null> {
    // Written before per-account keys: sealed under the data key for `<field>:<account>`, or clear.
    if (!value.startsWith(PREFIX)) return this.wrapper.open(value, `${field}:${accountId}`);
    const key = await this.keyOf(accountId, false);
    if (key === null) return null;
    const opened = gcmOpen(key, Buffer.from(value.slice(PREFIX.length), 'base64url'), aad(accountId, field));
    if ('refused' in opened && opened.refused === 'short') throw new SecretUnreadableError(`a sealed ${field} of ${accountId} is damaged (too short)`);
    if ('refused' in opened) throw new SecretUnreadableError(`a sealed ${field} does not open under the key of ${accountId}: altered, or sealed for another account or field`);
    return opened.plain;
  }

  async forget(accountId: string): Promise<void> {
    await this.keys.destroy(accountId, this.clock.now().toISOString());
  }

  /** The account's key; null once forgotten (or, unless `create`, before it has one). */
  private async keyOf(accountId: string, create: boolean): Promise<Buffer | null> {
    let stored = await this.keys.find(accountId);
    if (stored === null && create) {
      const wrapped = await this.wrapper.seal(randomBytes(KEY_BYTES).toString('base64'), wrapContext(accountId));
      stored = await this.keys.create(accountId, wrapped, this.clock.now().toISOString());
    }
    if (stored === null || stored.wrapped === null) return null;
    return Buffer.from(await this.wrapper.open(stored.wrapped, wrapContext(accountId)), 'base64');
  }
}

const aad = (accountId: string, field: PersonalField) => Buffer.from(`${PREFIX}${field}:${accountId}`, 'utf8');
const wrapContext = (accountId: string) => `account-key:${accountId}`;
