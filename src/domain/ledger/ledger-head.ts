/**
 * Signed ledger heads (docs/ledger.md, "Signed heads"). A head says "at `at`, line `seq` of
 * account `account_id`'s ledger had hash `hash`"; the hash commits to every line before it, so a
 * customer who kept a signed head can hold the operator to the whole chain up to it: a rewrite
 * that recomputed every later hash (which the hashes alone cannot show) no longer ends on it.
 *
 * The service signs with Ed25519 the statement
 *   `scores-ledger-head:v1\n<account_id>\n<seq>\n<hash>\n<at>\n<key_id>`
 * (UTF-8, no trailing newline). The key id is part of it, so a signature cannot be passed off
 * under another key.
 */
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

export const HEAD_STATEMENT = 'scores-ledger-head:v1';
export const HEAD_ALGORITHM = 'Ed25519';

/** A ledger's head: its last line at an instant. */
export interface LedgerHead {
  account_id: string;
  /** The line's position in the ledger (0-based). */
  seq: number;
  /** The line's hash. */
  hash: string;
  /** When the head was signed (ISO 8601, UTC). */
  at: string;
}

/** A head with the service's signature over its statement. */
export interface SignedLedgerHead extends LedgerHead {
  statement: typeof HEAD_STATEMENT;
  key_id: string;
  alg: typeof HEAD_ALGORITHM;
  /** Ed25519 signature of the statement, base64. */
  signature: string;
}

/** A public key as `/.well-known/scores-ledger-keys.json` lists it. */
export interface LedgerPublicKey {
  key_id: string;
  alg: typeof HEAD_ALGORITHM;
  /** The key in SubjectPublicKeyInfo DER form, base64 (`crypto.createPublicKey({ key, format: 'der', type: 'spki' })`). */
  public_key: string;
  /** When the key was made; null when the operator gave it without saying. */
  created_at: string | null;
  /** From when the key signs no more (heads it signed before stay valid); null for the key in use. */
  retired_at: string | null;
}

/** What signs heads: the key in use. */
export interface HeadSigner {
  readonly keyId: string;
  sign(head: LedgerHead): SignedLedgerHead;
}

/** The text a head's signature covers. */
export function headStatement(head: LedgerHead & { key_id: string }): string {
  return `${HEAD_STATEMENT}\n${head.account_id}\n${head.seq}\n${head.hash}\n${head.at}\n${head.key_id}`;
}

/** A key's id: `lk_` and the first 16 hex digits of SHA-256 of its SPKI DER, the same in every process holding it. */
export function ledgerKeyId(publicKey: KeyObject): string {
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return `lk_${createHash('sha256').update(der).digest('hex').slice(0, 16)}`;
}

/** A signer over an Ed25519 private key. */
export function headSigner(privateKey: KeyObject): HeadSigner {
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`a ledger signing key must be Ed25519, not ${privateKey.asymmetricKeyType ?? 'unknown'}`);
  const keyId = ledgerKeyId(createPublicKey(privateKey));
  return {
    keyId,
    sign(head) {
      const fields = { account_id: head.account_id, seq: head.seq, hash: head.hash, at: head.at };
      const signature = sign(null, Buffer.from(headStatement({ ...fields, key_id: keyId }), 'utf8'), privateKey).toString('base64');
      return { statement: HEAD_STATEMENT, ...fields, key_id: keyId, alg: HEAD_ALGORITHM, signature };
    },
  };
}

/** The public-key entry of a key, as published. */
export function publicKeyEntry(publicKey: KeyObject, createdAt: string | null, retiredAt: string | null): LedgerPublicKey {
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { key_id: ledgerKeyId(publicKey), alg: HEAD_ALGORITHM, public_key: der.toString('base64'), created_at: createdAt, retired_at: retiredAt };
}

export type HeadCheck = { ok: true; key: LedgerPublicKey } | { ok: false; reason: string };

/**
 * Whether a signed head carries a valid signature of one of `keys` (retired keys included: a head
 * signed before a rotation stays valid). A key retired before the head's instant did not sign it.
 */
export function verifySignedHead(head: unknown, keys: readonly LedgerPublicKey[]): HeadCheck {
  const h = head as Partial<SignedLedgerHead> | null;
  if (h === null || typeof h !== 'object' || h.statement !== HEAD_STATEMENT || h.alg !== HEAD_ALGORITHM) {
    return { ok: false, reason: `not a signed ledger head (statement ${HEAD_STATEMENT}, alg ${HEAD_ALGORITHM})` };
  }
  if (typeof h.account_id !== 'string' || !Number.isSafeInteger(h.seq) || typeof h.hash !== 'string' || typeof h.at !== 'string' || typeof h.signature !== 'string') {
    return { ok: false, reason: 'a signed ledger head needs account_id, seq, hash, at and signature' };
  }
  const key = keys.find((k) => k.key_id === h.key_id);
  if (!key) return { ok: false, reason: `signed by key ${String(h.key_id)}, which is not one of the service's keys` };
  if (key.retired_at !== null && h.at > key.retired_at) return { ok: false, reason: `key ${key.key_id} was retired at ${key.retired_at}, before ${h.at}` };
  const publicKey = createPublicKey({ key: Buffer.from(key.public_key, 'base64'), format: 'der', type: 'spki' });
  const statement = headStatement({ account_id: h.account_id, seq: h.seq!, hash: h.hash, at: h.at, key_id: key.key_id });
  const valid = verify(null, Buffer.from(statement, 'utf8'), publicKey, Buffer.from(h.signature, 'base64'));
  return valid ? { ok: true, key } : { ok: false, reason: `the signature is not key ${key.key_id}'s over this head` };
}
