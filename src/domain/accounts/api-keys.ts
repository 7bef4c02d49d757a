import { randomBytes } from 'node:crypto';
import { badRequest } from '../../core/errors.js';
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

/** The longest name a key may be given. */
export const MAX_KEY_NAME_LENGTH = 60;

/** The name of a key given none: its place among the account's keys, `Key 1` for the first. */
export const defaultKeyName = (place: number): string => `Key ${place}`;

/**
 * A key name as given (the account page, `scores keys create --name`): spaces trimmed and runs of
 * them made one; null when none was given. Control characters or more than MAX_KEY_NAME_LENGTH
 * characters are refused (400).
 */
export function keyNameOf(given: string | undefined): string | null {
  const name = (given ?? '').trim().replace(/\s+/g, ' ');
  if (name === '') return null;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw badRequest('A key name is text without control characters');
  if ([...name].length > MAX_KEY_NAME_LENGTH) throw badRequest(`A key name has at most ${MAX_KEY_NAME_LENGTH} characters`, { maximum: MAX_KEY_NAME_LENGTH });
  return name;
}
