/**
 * Which API process of the fleet answers a caller: rendezvous (highest random weight) hashing.
 * Each process weighs each caller by a hash of the two, and a caller goes to the live process of
 * highest weight, so one account key's calls have one writer to its ledger while that process
 * lives. Rendezvous rather than a hash ring: a fleet has at most 16 processes, so weighing each
 * one per request costs nothing beside the proxy hop, and there is no ring of virtual nodes to
 * build. Removing a process moves only its callers, each to its own next-highest process; that
 * is also the failover order, so a dead process's callers spread over the others, not onto one
 * neighbour.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { API_KEY_HEADER } from '../../web/response-headers.js';
import { SESSION_COOKIE } from '../http/account/account-web.js';

/** A process as the routing sees it: the hash of its name, and whether it is live. */
export interface Member {
  readonly hash: number;
  readonly healthy: boolean;
}

/** The first 32 bits of the SHA-256 of `text`: a caller's or a process's hash (a key is kept only as this). */
export function hash32(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

/** A process's weight for a caller: MurmurHash3's finalizer over the two hashes (its avalanche keeps two processes' weights independent). */
export function weight(caller: number, member: number): number {
  let h = (caller ^ member) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The live member of highest weight for the caller (on a tie the earlier one), or null when none is live. */
export function chooseMember<T extends Member>(caller: number, members: readonly T[]): T | null {
  let best: T | null = null;
  let bestWeight = -1;
  for (const member of members) {
    if (!member.healthy) continue;
    const w = weight(caller, member.hash);
    if (w > bestWeight) [best, bestWeight] = [member, w];
  }
  return best;
}

/**
 * The hash of what names a request's caller, or null for none: its API key (the `X-API-Key`
 * header, trimmed as the meter trims it; REST and MCP read the key there and nowhere else), else
 * its account session's cookie, so a signed-in browser's pages and forms stay on one process too.
 */
export function callerOf(headers: IncomingHttpHeaders): number | null {
  // node joins a repeated header's values into one string (the meter refuses such a key).
  const key = headers[API_KEY_HEADER.toLowerCase()];
  if (typeof key === 'string' && key.trim()) return hash32(`key:${key.trim()}`);
  const session = cookieValue(headers.cookie, SESSION_COOKIE);
  return session ? hash32(`session:${session}`) : null;
}

function cookieValue(header: string | undefined, name: string): string | null {
  for (const pair of header?.split(';') ?? []) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim() || null;
  }
  return null;
}
