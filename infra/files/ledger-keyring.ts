/**
 * The key that signs ledger heads, and the public keys published beside it (docs/ledger.md,
 * "Signed heads"; docs/operations.md, "The ledger signing key"). The key comes from the
 * environment (`LEDGER_SIGNING_KEY`) or, on the embedded store, from a file of the data directory
 * generated on first start (mode 0600). No function here writes key material anywhere but that file.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { createPrivateJson, readPrivateJson, replacePrivateJson } from './private-json-file.js';
import { headSigner, ledgerKeyId, publicKeyEntry, type HeadSigner, type LedgerPublicKey } from '../../src/domain/ledger/ledger-head.js';

export const LEDGER_KEY_FILE = 'ledger-signing-key.json';

export interface LedgerKeyring {
  /** Signs heads with the key in use; null when this process has no key (a shared log without `LEDGER_SIGNING_KEY`). */
  signer: HeadSigner | null;
  /** Every key a head may be checked with: the one in use first, then the retired ones. */
  keys: LedgerPublicKey[];
  /** Where the key in use came from. */
  source: 'environment' | 'file' | 'none';
}

export interface KeyringOptions {
  dataDir: string;
  /** `LEDGER_SIGNING_KEY`, parsed. */
  signingKey: KeyObject | null;
  /** `LEDGER_RETIRED_KEYS`, parsed. */
  retired: LedgerPublicKey[];
  /** The log is shared by processes that may not share a data directory: only the environment's key may sign. */
  sharedLog: boolean;
  now: Date;
}

/** The key file: the key in use (PKCS8 PEM) and the keys it replaced. */
interface KeyFile {
  current: { private_key: string; created_at: string };
  retired: LedgerPublicKey[];
}

/** Opens the keyring: the environment's key, else (embedded store only) the data directory's, generated on first start. */
export function openLedgerKeyring(o: KeyringOptions): LedgerKeyring {
  if (o.signingKey) {
    const current = publicKeyEntry(createPublicKey(o.signingKey), null, null);
    return { signer: headSigner(o.signingKey), keys: [current, ...o.retired.filter((k) => k.key_id !== current.key_id)], source: 'environment' };
  }
  if (o.sharedLog) return { signer: null, keys: o.retired, source: 'none' };
  const file = readKeyFile(o.dataDir) ?? createKeyFile(o.dataDir, o.now);
  const privateKey = createPrivateKey(file.current.private_key);
  const current = publicKeyEntry(createPublicKey(privateKey), file.current.created_at, null);
  const retired = [...file.retired, ...o.retired].filter((k, i, all) => k.key_id !== current.key_id && all.findIndex((x) => x.key_id === k.key_id) === i);
  return { signer: headSigner(privateKey), keys: [current, ...retired], source: 'file' };
}

/**
 * `scores ledger rotate-key`: a new key signs from now on; the old one is listed as retired (heads
 * it signed stay verifiable). Only for the data directory's key: an environment's key is rotated
 * by giving a new `LEDGER_SIGNING_KEY` and the old public key in `LEDGER_RETIRED_KEYS`.
 */
export function rotateLedgerKey(dataDir: string, now: Date): { retired: LedgerPublicKey; current: LedgerPublicKey } {
  const at = now.toISOString();
  const old = readKeyFile(dataDir) ?? createKeyFile(dataDir, now);
  const oldKey = publicKeyEntry(createPublicKey(createPrivateKey(old.current.private_key)), old.current.created_at, at);
  const next: KeyFile = { current: newKey(at), retired: [oldKey, ...old.retired] };
  replacePrivateJson(join(dataDir, LEDGER_KEY_FILE), next);
  return { retired: oldKey, current: publicKeyEntry(createPublicKey(createPrivateKey(next.current.private_key)), at, null) };
}

function newKey(at: string): KeyFile['current'] {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), created_at: at };
}

function readKeyFile(dataDir: string): KeyFile | null {
  const path = join(dataDir, LEDGER_KEY_FILE);
  const parsed = readPrivateJson(path) as Partial<KeyFile> | null;
  if (parsed === null) return null;
  if (typeof parsed.current?.private_key !== 'string') throw new Error(`${path} holds no ledger signing key (current.private_key)`);
  return { current: parsed.current, retired: Array.isArray(parsed.retired) ? parsed.retired : [] };
}

/** A new key file, unless another process just wrote one (then its key is the one). */
function createKeyFile(dataDir: string, now: Date): KeyFile {
  const made: KeyFile = { current: newKey(now.toISOString()), retired: [] };
  return createPrivateJson(join(dataDir, LEDGER_KEY_FILE), made) ? made : readKeyFile(dataDir)!;
}

/**
 * `LEDGER_SIGNING_KEY`: an Ed25519 private key as PKCS8 PEM (newlines may be written `\n`), or
 * that PEM or its DER in base64. Errors never repeat the value.
 */
export function parseSigningKey(text: string): KeyObject {
  const pem = text.includes('-----BEGIN') ? text.replace(/\\n/g, '\n') : Buffer.from(text, 'base64').toString('utf8');
  let key: KeyObject;
  try {
    key = pem.includes('-----BEGIN') ? createPrivateKey(pem) : createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error('must be an Ed25519 private key: PKCS8 PEM, or its PEM or DER in base64');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`must be an Ed25519 private key (this one is ${key.asymmetricKeyType ?? 'unknown'})`);
  return key;
}

/**
 * `LEDGER_RETIRED_KEYS`: a JSON array of the public keys signing no more, as the well-known
 * document listed them (`public_key`, `retired_at`, optional `created_at`; the id is computed).
 */
export function parseRetiredKeys(text: string): LedgerPublicKey[] {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new Error('must be a JSON array of {"public_key", "retired_at"[, "created_at"]}');
  }
  if (!Array.isArray(list)) throw new Error('must be a JSON array of {"public_key", "retired_at"[, "created_at"]}');
  return list.map((k: Partial<LedgerPublicKey>, i) => {
    if (typeof k?.public_key !== 'string' || typeof k.retired_at !== 'string' || Number.isNaN(Date.parse(k.retired_at))) {
      throw new Error(`entry ${i}: needs public_key (SPKI DER, base64) and retired_at (an ISO 8601 instant)`);
    }
    let key: KeyObject;
    try {
      key = createPublicKey({ key: Buffer.from(k.public_key, 'base64'), format: 'der', type: 'spki' });
    } catch {
      throw new Error(`entry ${i}: public_key is not an SPKI DER key in base64`);
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new Error(`entry ${i}: not an Ed25519 key`);
    if (k.key_id !== undefined && k.key_id !== ledgerKeyId(key)) throw new Error(`entry ${i}: key_id is not this key's (${ledgerKeyId(key)})`);
    return publicKeyEntry(key, typeof k.created_at === 'string' ? k.created_at : null, new Date(k.retired_at).toISOString());
  });
}
