import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM as both sealing boxes store it (aes-gcm-secret-box.ts, account-key-vault.ts): a fresh
 * 96-bit IV, the ciphertext and the 128-bit tag, in one buffer; `aad` bound in.
 */
export function gcmSeal(key: Buffer, plain: string, aad: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  return Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
}

/** What opening a body gave: its plain text, or why not (too short for an IV and a tag; a tag that does not verify). */
export type GcmOpened = { plain: string } | { refused: 'short' | 'tag' };

/** The plain text of a `gcmSeal` body. */
export function gcmOpen(key: Buffer, body: Buffer, aad: Buffer): GcmOpened {
  if (body.length < IV_BYTES + TAG_BYTES) return { refused: 'short' };
  const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return { plain: Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8') };
  } catch {
    return { refused: 'tag' };
  }
}
