import type { PositionMode } from './event-log.sql.js';

const WIDTH = 20;
const pad = (n: string | number | bigint) => n.toString().padStart(WIDTH, '0');

/**
 * Positions as the port wants them: fixed-width text whose string order is log order.
 * Serialised logs number their events (1, 2, 3…, the same form as the embedded store, so the
 * projection lag is a subtraction; a refused append leaves a gap, which only over-counts the lag);
 * fenced logs order by (transaction id, sequence number), written `tx:position`.
 */
export function encodePosition(mode: PositionMode, row: { position: string | number; tx: string }): string {
  return mode === 'serialised' ? pad(row.position) : `${pad(row.tx)}:${pad(row.position)}`;
}

/** The bounds a read starts strictly after; throws on a position this log never gave out. */
export function decodePosition(mode: PositionMode, position: string | null | undefined): { tx: string; position: string } {
  if (!position) return { tx: '0', position: '0' };
  const m = mode === 'serialised' ? /^()(\d{1,20})$/.exec(position) : /^(\d{1,20}):(\d{1,20})$/.exec(position);
  if (!m) throw new Error(`not a position of this ${mode} PostgreSQL event log: ${position}`);
  return { tx: BigInt(m[1] || '0').toString(), position: BigInt(m[2]!).toString() };
}
