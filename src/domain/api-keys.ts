import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../core/sha256.js';

/** Recognisable prefix of every key: secret scanners and people can tell what leaked. */
export const KEY_PREFIX = 'sk_live_';
/** How many characters of a key are kept in clear to show which key is which. */
export const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;

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
