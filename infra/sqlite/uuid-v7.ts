import { randomFillSync } from 'node:crypto';

const BYTES = 16;
const pool = Buffer.alloc(BYTES * 256);
let offset = pool.length;

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits.
 *
 * The event log's ids are v7 rather than v4 because the `id` column is a unique B-tree index:
 * a random v4 id lands on a random page of it, so every commit dirties (and the WAL rewrites) one
 * 16 KiB page per event, while time-ordered ids all land on the rightmost pages (`npm run bench`
 * compares the two on the append path). The time is the wall clock's, not the service clock's:
 * it orders insertions, it says nothing about the business date.
 */
export function uuidV7(now: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = pool.subarray(offset, offset + BYTES);
  offset += BYTES;
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
