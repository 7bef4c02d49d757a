import { createHash } from 'node:crypto';
import { gcmOpen, gcmSeal } from './aes-gcm.js';
import type { SecretBox } from './secret-box.port.js';

/** A 256-bit data key and its id (the first 8 bytes of its SHA-256, hex): a sealed string names the key it needs. */
export interface DataKey {
  id: string;
  key: Buffer;
}

export const DATA_KEY_BYTES = 32;
/** `sealed:v1:<key id>:<base64url of iv, ciphertext, tag>`. */
const PREFIX = 'sealed:v1:';
const SEALED = /^sealed:v1:([0-9a-f]{16}):([A-Za-z0-9_-]+)$/;

export const dataKeyId = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 16);

const isSealed = (value: string): boolean => value.startsWith(PREFIX);

/** A sealed string whose key this process does not hold, or that does not open (altered, or another context's). */
export class SecretUnreadableError extends Error {}

/**
 * AES-256-GCM (aes-gcm.ts) under the key in use, with a fresh 96-bit IV per seal. The authenticated data is the
 * format, the key id and the context, so a sealed value moved to another context (one account's
 * secret copied under another's) does not open. Retired keys still open what they sealed.
 */
export class AesGcmSecretBox implements SecretBox {
  private readonly byId: Map<string, Buffer>;

  constructor(
    private readonly current: DataKey,
    retired: readonly DataKey[] = [],
  ) {
    if (current.key.length !== DATA_KEY_BYTES) throw new RangeError(`a data key is ${DATA_KEY_BYTES} bytes`);
    this.byId = new Map([current, ...retired].map((k) => [k.id, k.key]));
  }

  /** The id of the key new seals use. */
  get keyId(): string {
    return this.current.id;
  }

  async seal(plain: string, context: string): Promise<string> {
    return `${PREFIX}${this.current.id}:${gcmSeal(this.current.key, plain, aad(this.current.id, context)).toString('base64url')}`;
  }

  async open(value: string, context: string): Promise<string> {
    if (!isSealed(value)) return value;
    const m = SEALED.exec(value);
    if (!m) throw new SecretUnreadableError('a sealed secret is damaged (not sealed:v1:<key id>:<base64url>)');
    const [, id, encoded] = m as unknown as [string, string, string];
    const key = this.byId.get(id);
    if (!key) throw new SecretUnreadableError(`a secret is sealed under data key ${id}, which this process does not hold (DATA_ENCRYPTION_RETIRED_KEYS, docs/operations.md)`);
    const opened = gcmOpen(key, Buffer.from(encoded, 'base64url'), aad(id, context));
    if ('refused' in opened && opened.refused === 'short') throw new SecretUnreadableError('a sealed secret is damaged (too short)');
    if ('refused' in opened) throw new SecretUnreadableError(`a secret sealed under data key ${id} does not open: altered, or sealed for another owner`);
    return opened.plain;
  }
}

const aad = (keyId: string, context: string): Buffer => Buffer.from(`${PREFIX}${keyId}:${context}`, 'utf8');
