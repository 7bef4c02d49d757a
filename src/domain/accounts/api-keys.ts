import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../core/sha256.js';

/** Recognisable prefix of every key: secret scanners and people can tell what leaked. */
export const KEY_PREFIX = 'sk_live_';
/** How many characters of a key are kept in clear to show which key is which. */
export const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;

/**
 * An account holds at most this many active keys: creating one more is 422 `limit_exceeded`.
 * A rotation replaces a key rather than adding one, so it is never refused; the replaced key's
 * grace ends when its successor is rotated or revoked, so at most one key in grace trails each
 * active key, and an account never has more than twice this many keys that work.
 */
export const MAX_ACTIVE_KEYS_PER_ACCOUNT = 10;

/** A new key: 256 random bits, base64url, after the prefix. Shown once; only its hash is stored. */
export function generateApiKey(random: (n: number) => Buffer = randomBytes): string {
  return KEY_PREFIX + random(32).toString('base64url');
}

export function hashApiKey(key: string): string {
  return sha256Hex(key);
}

export function shownPrefix(key: string): string {
  return key.slice(0, SHOWN_PREFIX_LENGTH);
}
