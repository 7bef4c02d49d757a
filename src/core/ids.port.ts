import { randomBytes } from 'node:crypto';

/**
 * Where new identifiers come from, as time comes from the clock port: passed in from the
 * composition root, never generated inside a decider or a handler.
 */
export interface Ids {
  /** `prefix` followed by `bytes` random bytes in base64url (`req_…`, `key_…`, `pack_…`). */
  next(prefix: string, bytes: number): string;
  /** `prefix` followed by `length` random lowercase hex digits (`acct_…`). */
  nextHex(prefix: string, length: number): string;
}

/**
 * Random ids from the OS's generator. The bytes come from a pool refilled 3 KiB at a time (as
 * `crypto.randomUUID` does): one `randomBytes` call per request is measurable on the hot path.
 */
export function randomIds(): Ids {
  const POOL = 3072;
  let pool = Buffer.alloc(0);
  let offset = 0;
  const take = (n: number): [Buffer, number] => {
    if (offset + n > pool.length) {
      pool = randomBytes(Math.max(POOL, n));
      offset = 0;
    }
    const at = offset;
    offset += n;
    return [pool, at];
  };
  return {
    next(prefix, bytes) {
      const [buf, at] = take(bytes);
      return prefix + buf.toString('base64url', at, at + bytes);
    },
    nextHex(prefix, length) {
      const bytes = Math.ceil(length / 2);
      const [buf, at] = take(bytes);
      return prefix + buf.toString('hex', at, at + bytes).slice(0, length);
    },
  };
}
