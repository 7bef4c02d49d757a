/**
 * The data keys that seal secrets at rest (docs/operations.md, "Secrets at rest"): the key in use
 * and the retired ones that still open what they sealed. From the environment
 * (`DATA_ENCRYPTION_KEY`, `DATA_ENCRYPTION_RETIRED_KEYS`) or else the data directory's
 * `data-encryption-keys.json`, generated on first start (mode 0600). No function here writes key
 * material anywhere but that file.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AesGcmSecretBox, DATA_KEY_BYTES, dataKeyId, type DataKey } from '../../src/core/aes-gcm-secret-box.js';
import { createPrivateJson, readPrivateJson, replacePrivateJson } from './private-json-file.js';

export const DATA_KEY_FILE = 'data-encryption-keys.json';

interface KeyFile {
  current: { key: string; created_at: string };
  retired: { key: string; created_at: string | null; retired_at: string }[];
}

export interface DataKeyring {
  box: AesGcmSecretBox;
  /** Where the key in use came from. */
  source: 'environment' | 'file';
}

export interface DataKeyringOptions {
  dataDir: string;
  /** `DATA_ENCRYPTION_KEY`, parsed. */
  key: DataKey | null;
  /** `DATA_ENCRYPTION_RETIRED_KEYS`, parsed. */
  retired: DataKey[];
  now: Date;
}

/** The environment's key, else the data directory's (generated on first start); retired keys from both. */
export function openDataKeyring(o: DataKeyringOptions): DataKeyring {
  if (o.key) return { box: new AesGcmSecretBox(o.key, o.retired), source: 'environment' };
  const file = readKeyFile(o.dataDir) ?? createKeyFile(o.dataDir, o.now);
  const retired = [...file.retired.map((k) => parseDataKey(k.key)), ...o.retired];
  return { box: new AesGcmSecretBox(parseDataKey(file.current.key), retired), source: 'file' };
}

/**
 * `scores secrets rotate-key`: new secrets are sealed under a new key from now on; the old one is
 * kept as retired, so what it sealed still opens. Only for the data directory's key: an
 * environment's key is rotated by a new `DATA_ENCRYPTION_KEY` and the old one added to
 * `DATA_ENCRYPTION_RETIRED_KEYS`.
 */
export function rotateDataKey(dataDir: string, now: Date): { retired: string; current: string } {
  const at = now.toISOString();
  const old = readKeyFile(dataDir) ?? createKeyFile(dataDir, now);
  const next: KeyFile = { current: newKey(at), retired: [{ ...old.current, retired_at: at }, ...old.retired] };
  replacePrivateJson(join(dataDir, DATA_KEY_FILE), next);
  return { retired: parseDataKey(old.current.key).id, current: parseDataKey(next.current.key).id };
}

/** A key given as base64 of 32 bytes (`openssl rand -base64 32`); errors never repeat it. */
export function parseDataKey(text: string): DataKey {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== DATA_KEY_BYTES || key.toString('base64') !== text.trim()) throw new Error(`must be ${DATA_KEY_BYTES} random bytes in base64 (openssl rand -base64 32)`);
  return { id: dataKeyId(key), key };
}

/** `DATA_ENCRYPTION_RETIRED_KEYS`: keys that sealed before, comma separated, each as DATA_ENCRYPTION_KEY is given. */
export function parseRetiredDataKeys(text: string): DataKey[] {
  return text
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k, i) => {
      try {
        return parseDataKey(k);
      } catch (err) {
        throw new Error(`entry ${i}: ${(err as Error).message}`);
      }
    });
}

const newKey = (at: string): KeyFile['current'] => ({ key: randomBytes(DATA_KEY_BYTES).toString('base64'), created_at: at });

function readKeyFile(dataDir: string): KeyFile | null {
  const path = join(dataDir, DATA_KEY_FILE);
  const parsed = readPrivateJson(path) as Partial<KeyFile> | null;
  if (parsed === null) return null;
  if (typeof parsed.current?.key !== 'string') throw new Error(`${path} holds no data key (current.key)`);
  return { current: parsed.current, retired: Array.isArray(parsed.retired) ? parsed.retired : [] };
}

/** A new key file, unless another process just wrote one (then its key is the one). */
function createKeyFile(dataDir: string, now: Date): KeyFile {
  const made: KeyFile = { current: newKey(now.toISOString()), retired: [] };
  return createPrivateJson(join(dataDir, DATA_KEY_FILE), made) ? made : readKeyFile(dataDir)!;
}
