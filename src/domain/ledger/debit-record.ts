/**
 * The fixed-width form of a lone metered call's debit (a `CreditsDebited` event of a ledger
 * stream), which the event stores that support it keep as a row of plain columns instead of a
 * generic event row with a text id and JSON data: the calls an account makes one at a time are
 * most of what the log holds. The form is lossless: `debitData(debitRecordOf(t, d))` gives back
 * data whose JSON text is `d`'s exactly (same keys, same order, same values), so readers and the
 * hash chain see the event as it was appended. Data that would not come back exactly (another
 * field, a non-canonical instant, a hash in capitals) has no record: it stays a generic event.
 */

/** The event type that has a record. */
export const DEBIT_RECORD_TYPE = 'CreditsDebited';

/** The data's keys, in the order the ledger seals them (body, then `at` and the chain). */
const KEYS = ['request_id', 'endpoint', 'channel', 'cost', 'from_allowance', 'from_prepaid', 'from_overage', 'period', 'at', 'prev_hash', 'hash'] as const;

export interface DebitRecord {
  request_id: string;
  endpoint: string;
  channel: string;
  cost: number;
  from_allowance: number;
  from_prepaid: number;
  from_overage: number;
  /** `at` in ms since the epoch. */
  at: number;
  /** Null when it is the month of `at` (always, for the ledger's own debits). */
  period: string | null;
  /** 64 lowercase hex digits each: a store keeps them as 32 bytes. */
  prev_hash: string;
  hash: string;
}

const HEX64 = /^[0-9a-f]{64}$/;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isName = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 64;

/** The record of an event, or null when it has none (another type, or data the record would not give back exactly). */
export function debitRecordOf(type: string, data: unknown): DebitRecord | null {
  if (type !== DEBIT_RECORD_TYPE || data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const d = data as Record<string, unknown>;
  const keys = Object.keys(d);
  if (keys.length !== KEYS.length || keys.some((k, i) => k !== KEYS[i])) return null;
  const { request_id, endpoint, channel, cost, from_allowance, from_prepaid, from_overage, period, at, prev_hash, hash } = d;
  if (typeof request_id !== 'string' || !isName(endpoint) || !isName(channel) || !isName(period)) return null;
  if (![cost, from_allowance, from_prepaid, from_overage].every(isCount)) return null;
  if (typeof prev_hash !== 'string' || typeof hash !== 'string' || !HEX64.test(prev_hash) || !HEX64.test(hash)) return null;
  if (typeof at !== 'string') return null;
  const ms = Date.parse(at);
  if (!Number.isFinite(ms) || new Date(ms).toISOString() !== at) return null;
  return {
    request_id,
    endpoint,
    channel,
    cost: cost as number,
    from_allowance: from_allowance as number,
    from_prepaid: from_prepaid as number,
    from_overage: from_overage as number,
    at: ms,
    period: period === at.slice(0, 7) ? null : period,
    prev_hash,
    hash,
  };
}

/** The event data a record stands for, keys in the order they were sealed. */
export function debitData(r: DebitRecord): Record<string, unknown> {
  const at = new Date(r.at).toISOString();
  return {
    request_id: r.request_id,
    endpoint: r.endpoint,
    channel: r.channel,
    cost: r.cost,
    from_allowance: r.from_allowance,
    from_prepaid: r.from_prepaid,
    from_overage: r.from_overage,
    period: r.period ?? at.slice(0, 7),
    at,
    prev_hash: r.prev_hash,
    hash: r.hash,
  };
}

/**
 * The id of an event stored as a record (it has none of its own: records are only made for
 * events appended without one): derived from its log position, in a UUID's shape whose version
 * digit (8) no generated id (7, or 4) has.
 */
export const debitRecordId = (position: number): string => `00000000-0000-8000-8000-${position.toString(16).padStart(12, '0')}`;

/**
 * The record form of an appended event, or null when it stays a generic event: a store writing
 * records (`debits`, `records` by default) keeps a `CreditsDebited` without an id of its own whose
 * metadata is at most the call's key (the account page's "last used", withCallKeys in
 * src/domain/ledger/ledger.events.ts): the record keeps that key beside the debit.
 */
export function debitRecordForm(
  e: { type: string; data: unknown; metadata?: Record<string, unknown>; id?: string },
  debits: 'records' | 'events' = 'records',
): { record: DebitRecord; key: string | null } | null {
  if (debits !== 'records' || e.id !== undefined) return null;
  const names = e.metadata ? Object.keys(e.metadata) : [];
  const key = names.length === 0 ? null : names.length === 1 && isName(e.metadata!['key_id']) ? (e.metadata!['key_id']) : undefined;
  if (key === undefined) return null;
  const record = debitRecordOf(e.type, e.data);
  return record && { record, key };
}
