/**
 * Credit-ledger events. One stream per account: `ledger-<account_id>`.
 *
 * Every event's data carries `at` (the ISO instant the decision was taken) and a hash chain:
 * `hash = sha256hex(prev_hash + "\n" + canonicalJson(data without hash))`, the first event's
 * `prev_hash` being 64 zeros. `scores audit` replays a stream with `verifyChain` so that an edited,
 * inserted or removed event in the middle of a ledger is detected.
 */
import type { NewEvent } from '../../core/event-store.port.js';
import { sha256Hex } from '../../core/sha256.js';
import type { Tier, UsageAlertThreshold } from '../plans.js';
import type { RateKey } from '../rate-card.js';

export const LEDGER_STREAM_PREFIX = 'ledger-';
export const ledgerStream = (accountId: string) => `${LEDGER_STREAM_PREFIX}${accountId}`;

/** `prev_hash` of a stream's first event. */
export const GENESIS_HASH = '0'.repeat(64);

export type Channel = 'rest' | 'mcp';

/** Fields every ledger event's data carries. */
export interface Chained {
  at: string;
  prev_hash: string;
  hash: string;
}

type Event<T extends string, D> = { type: T; data: D & Chained };

/** A developer account's ledger starts. Overage always starts off (hard stop). */
export type LedgerOpened = Event<'LedgerOpened', { account_id: string; tier: Tier; pro: boolean; allow_overage: false }>;

/** A calendar month (UTC) starts: the allowance resets, prepaid credits carry over. */
export type AllowancePeriodOpened = Event<
  'AllowancePeriodOpened',
  { period: string; /** null = unmetered */ allowance: number | null; resets_at: string }
>;

/** A metered call was charged, split across the three sources in draw order. */
export type CreditsDebited = Event<
  'CreditsDebited',
  {
    request_id: string;
    endpoint: RateKey;
    channel: Channel;
    cost: number;
    from_allowance: number;
    from_prepaid: number;
    from_overage: number;
    period: string;
  }
>;

/** The seven fields of a call's charge, as columns: entry `i` of each is call `i`. */
export interface DebitColumns {
  request_id: string[];
  endpoint: RateKey[];
  channel: Channel[];
  cost: number[];
  from_allowance: number[];
  from_prepaid: number[];
  from_overage: number[];
}

/**
 * Calls charged in one append (the account's group commit): the `CreditsDebited` events of the
 * calls, in order, with their shared `at` and `period` once and their other fields as columns.
 * It is a storage form only: each call is still a ledger line of its own, `CreditsDebited` with
 * its own data and hash chained as if written one by one (`debitLines` gives them back), so a
 * customer verifies a call by its `request_id` exactly as before. `prev_hash` is the hash before
 * the first call; `hash` is the last call's hash (what the next event chains from).
 */
export type CreditsDebitedBatch = Event<'CreditsDebitedBatch', { period: string; calls: DebitColumns }>;

/** `price_cents` and `payment_ref` when bought on the account page (the operator's CLI grants packs unpriced). */
export type PackPurchased = Event<'PackPurchased', { pack_id: string; credits: number; price_cents?: number; payment_ref?: string }>;

export type OverageSwitched = Event<'OverageSwitched', { allow_overage: boolean }>;

export type PlanChanged = Event<'PlanChanged', { tier: Tier; reason: 'set' | 'cancelled_at_period_end' | 'downgraded_at_period_end' }>;

/** The paid plan falls back to free at `effective_at` (the period end); the key keeps working. */
export type PlanCancellationScheduled = Event<'PlanCancellationScheduled', { effective_at: string }>;

/** The plan moves to a cheaper `tier` at `effective_at` (the period end): a downgrade is never prorated. */
export type PlanDowngradeScheduled = Event<'PlanDowngradeScheduled', { tier: Tier; effective_at: string }>;

/**
 * A change that costs more, charged at once for the rest of the month (src/domain/ledger/proration.ts):
 * an upgrade (`kind` plan, `from` → `to` tiers) or a Pro membership started mid-month (`kind` pro).
 * `payment_ref` is the Billing port's reference of the payment.
 */
export type ProrationCharged = Event<
  'ProrationCharged',
  { kind: 'plan' | 'pro'; from: string; to: string; days: number; days_in_month: number; amount_cents: number; payment_ref: string; period: string }
>;

export type ProMembershipChanged = Event<'ProMembershipChanged', { pro: boolean }>;

export type UsageAlertRaised = Event<
  'UsageAlertRaised',
  { period: string; threshold: UsageAlertThreshold; used: number; allowance: number }
>;

/**
 * A month (UTC) ends: recorded with the next month's first decision, before anything of that
 * month. `carried` is the whole state at the end of `period` (everything but `last_hash`, which is
 * this event's `prev_hash`), so a month can be replayed and audited from its closing event alone,
 * without the months before it. The fold sets the state to it.
 */
export type LedgerPeriodClosed = Event<'LedgerPeriodClosed', { period: string; carried: CarriedLedgerState }>;

/** The ledger state a closing event carries into the next month. */
export interface CarriedLedgerState {
  opened: boolean;
  account_id: string | null;
  tier: Tier;
  pro: boolean;
  allow_overage: boolean;
  /** Banked pack credits; they carry over month to month. */
  prepaid: number;
  /**
   * The credits of every pack bought, by purchase reference: the reference is the purchase's
   * idempotency key, so a retried purchase is credited once (`decide` checks it here, where the
   * append's expected revision makes the check race-free).
   */
  packs: Readonly<Record<string, number>>;
  /** Current period `YYYY-MM`, null before the first one opens. */
  period: string | null;
  /** The current period's allowance; null = unmetered. */
  allowance: number | null;
  resets_at: string | null;
  /** Credits drawn from this period's allowance. */
  used_allowance: number;
  /** Credits charged as overage this period. */
  overage_credits: number;
  /** Accrued overage in millionths of a dollar, each debit at the rate of the tier it ran under. */
  overage_micro_usd: number;
  /** Alert thresholds already raised this period. */
  alerts: readonly UsageAlertThreshold[];
  /** When a scheduled cancellation or downgrade takes effect; null when none is pending. */
  cancellation_effective_at: string | null;
  /** The tier it takes the account to (null: free, as a cancellation; absent in states written before downgrades). */
  scheduled_tier?: Tier | null;
  /** The payment of the last purchase recorded (an upgrade, a membership): the same payment again records nothing. */
  last_payment_ref?: string | null;
}

export type LedgerEvent =
  | LedgerOpened
  | LedgerPeriodClosed
  | AllowancePeriodOpened
  | CreditsDebited
  | CreditsDebitedBatch
  | PackPurchased
  | OverageSwitched
  | PlanChanged
  | PlanCancellationScheduled
  | PlanDowngradeScheduled
  | ProrationCharged
  | ProMembershipChanged
  | UsageAlertRaised;

export type LedgerEventType = LedgerEvent['type'];

/** An event's own fields, before `at` and the chain are added. */
export type LedgerEventBody<T extends LedgerEventType> = Omit<Extract<LedgerEvent, { type: T }>['data'], keyof Chained>;

export const LEDGER_EVENT_TYPES: readonly LedgerEventType[] = [
  'LedgerOpened',
  'LedgerPeriodClosed',
  'AllowancePeriodOpened',
  'CreditsDebited',
  'CreditsDebitedBatch',
  'PackPurchased',
  'OverageSwitched',
  'PlanChanged',
  'PlanCancellationScheduled',
  'PlanDowngradeScheduled',
  'ProrationCharged',
  'ProMembershipChanged',
  'UsageAlertRaised',
];

export function isLedgerEvent(e: { type: string }): e is LedgerEvent {
  return (LEDGER_EVENT_TYPES as readonly string[]).includes(e.type);
}

/** JSON with object keys sorted at every depth, so the same data always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // undefined has no JSON form; JSON.stringify drops such object keys, and so do we below.
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  // Every metered call hashes one event, whose data is flat: for such data the text is
  // JSON.stringify's own of a copy built in key order, which is several times faster than
  // writing it key by key. (Not for keys that look like array indexes, which objects list first,
  // nor for "__proto__", which an assignment does not make a key.)
  if (keys.every((k) => isFlatValue(object[k]) && !startsWithDigit(k) && k !== '__proto__')) {
    const sorted: Record<string, unknown> = {};
    for (const k of keys) if (object[k] !== undefined) sorted[k] = object[k];
    return JSON.stringify(sorted);
  }
  let out = '';
  for (const key of keys) {
    const v = object[key];
    if (v === undefined) continue;
    out += `${out ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(v)}`;
  }
  return `{${out}}`;
}

/** A value JSON.stringify writes inside an object exactly as `canonicalJson` writes it alone. */
const isFlatValue = (v: unknown): boolean => v === null || v === undefined || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
const startsWithDigit = (k: string): boolean => k.charCodeAt(0) >= 48 && k.charCodeAt(0) <= 57;

/**
 * The hash an event must carry: `sha256hex(prev_hash + "\n" + type + "\n" + canonicalJson(data
 * without hash))`. The type is part of it, so relabelling an entry breaks the chain too.
 * A `hash` field present in `data` is ignored.
 */
export function computeHash(type: string, data: { prev_hash: string }): string {
  const { hash: _ignored, ...rest } = data as { prev_hash: string; hash?: unknown };
  return hashUnsealed(type, rest);
}

/** `computeHash` of data known to have no `hash` (or an undefined one, which JSON leaves out). */
function hashUnsealed(type: string, data: { prev_hash: string }): string {
  const text = (type === 'CreditsDebited' && debitLineJson(data)) || canonicalJson(data);
  return sha256Hex(`${data.prev_hash}\n${type}\n${text}`);
}

/**
 * `canonicalJson` of a call's `CreditsDebited` data, written field by field in key order: every
 * metered call hashes one, and the generic form's key listing, sorting and copy were a third of
 * the ledger's share of a call's CPU. Null for any data not of exactly that shape (another field,
 * a value of another type, a number JSON would not write as itself), which takes the generic form.
 */
export function debitLineJson(data: object): string | null {
  const d = data as Record<string, unknown>;
  let defined = 0;
  for (const k in d) if (d[k] !== undefined) defined++;
  if (defined !== 10) return null;
  const { at, channel, cost, endpoint, from_allowance, from_overage, from_prepaid, period, prev_hash, request_id } = d;
  const texts = isString(at) && isString(channel) && isString(endpoint) && isString(period) && isString(prev_hash) && isString(request_id);
  if (!texts || !isFiniteNumber(cost) || !isFiniteNumber(from_allowance) || !isFiniteNumber(from_overage) || !isFiniteNumber(from_prepaid)) return null;
  const q = JSON.stringify;
  return (
    `{"at":${q(at)},"channel":${q(channel)},"cost":${q(cost)},"endpoint":${q(endpoint)},"from_allowance":${q(from_allowance)},` +
    `"from_overage":${q(from_overage)},"from_prepaid":${q(from_prepaid)},"period":${q(period)},"prev_hash":${q(prev_hash)},"request_id":${q(request_id)}}`
  );
}

const isString = (x: unknown): x is string => typeof x === 'string';
const isFiniteNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** Builds an event with `at`, `prev_hash` and `hash` filled in (one copy of `body`: hot path). */
export function sealEvent<T extends LedgerEventType>(
  type: T,
  body: LedgerEventBody<T>,
  at: string,
  prevHash: string,
): Extract<LedgerEvent, { type: T }> {
  // Object.assign, not a spread with more properties (why: withChanges in src/domain/ledger/ledger.state.ts).
  const data: Record<string, unknown> & { prev_hash: string } = Object.assign({}, body, { at, prev_hash: prevHash, hash: undefined });
  data['hash'] = hashUnsealed(type, data);
  return { type, data } as unknown as Extract<LedgerEvent, { type: T }>;
}

const DEBIT_FIELDS = ['request_id', 'endpoint', 'channel', 'cost', 'from_allowance', 'from_prepaid', 'from_overage'] as const;
/** The keys of a `CreditsDebited` event's data: the seven call fields, `period`, and `at` with the chain. */
const DEBIT_KEYS = DEBIT_FIELDS.length + 4;

/** The batch of a run of debits (two or more, one `at` and `period`), chained as they were. */
function batchOf(run: readonly CreditsDebited[]): CreditsDebitedBatch {
  const calls: DebitColumns = { request_id: [], endpoint: [], channel: [], cost: [], from_allowance: [], from_prepaid: [], from_overage: [] };
  for (const e of run) {
    const d = e.data;
    calls.request_id.push(d.request_id);
    calls.endpoint.push(d.endpoint);
    calls.channel.push(d.channel);
    calls.cost.push(d.cost);
    calls.from_allowance.push(d.from_allowance);
    calls.from_prepaid.push(d.from_prepaid);
    calls.from_overage.push(d.from_overage);
  }
  const first = run[0]!.data;
  return { type: 'CreditsDebitedBatch', data: { period: first.period, calls, at: first.at, prev_hash: first.prev_hash, hash: run[run.length - 1]!.data.hash } };
}

/**
 * The events of one append as the log stores them: every run of two or more `CreditsDebited`
 * decided at one instant becomes one `CreditsDebitedBatch`. Lossless: `ledgerLines` of the result
 * gives back exactly the events given (a debit with any other field is left as it is).
 */
export function packDebits(events: readonly LedgerEvent[]): LedgerEvent[] {
  if (events.length < 2) return events as LedgerEvent[];
  const out: LedgerEvent[] = [];
  let run: CreditsDebited[] = [];
  const flush = () => {
    if (run.length > 1) out.push(batchOf(run));
    else if (run.length === 1) out.push(run[0]!);
    run = [];
  };
  for (const e of events) {
    const packable = e.type === 'CreditsDebited' && Object.keys(e.data).length === DEBIT_KEYS;
    if (packable && run.length > 0 && (run[0]!.data.at !== e.data.at || run[0]!.data.period !== e.data.period)) flush();
    if (packable) run.push(e);
    else {
      flush();
      out.push(e);
    }
  }
  flush();
  return out;
}

/**
 * The events of one append with the key of each call beside its line: `metadata.key_id` on a
 * `CreditsDebited`, `metadata.key_ids` on a batch (in its calls' order, '' for a call that named
 * none). Metadata, not data: the hashed lines a customer verifies stay as they were, and a key id
 * shows in no /v1 answer. `keyOf` maps a call's request id to the key that made it.
 */
export function withCallKeys(events: readonly LedgerEvent[], keyOf: ReadonlyMap<string, string>): (LedgerEvent & Pick<NewEvent, 'metadata'>)[] {
  if (keyOf.size === 0) return events as LedgerEvent[];
  return events.map((e) => {
    if (e.type === 'CreditsDebited') {
      const key = keyOf.get(e.data.request_id);
      return key ? { ...e, metadata: { key_id: key } } : e;
    }
    if (e.type === 'CreditsDebitedBatch') {
      const keys = e.data.calls.request_id.map((r) => keyOf.get(r) ?? '');
      return keys.some((k) => k !== '') ? { ...e, metadata: { key_ids: keys } } : e;
    }
    return e;
  });
}

/** The keys a recorded debit or batch of debits names (withCallKeys); none for events written before keys were kept. */
export function callKeysOf(e: { type: string; metadata?: Record<string, unknown> | null }): string[] {
  const m = e.metadata ?? {};
  const keys = e.type === 'CreditsDebitedBatch' ? m['key_ids'] : e.type === 'CreditsDebited' ? [m['key_id']] : [];
  return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string' && k !== '') : [];
}

/** A batch's columns when they are well formed (seven arrays of one length, at least one call), else null. */
function columnsOf(data: unknown): DebitColumns | null {
  const calls = (data as { calls?: unknown } | null)?.calls as Record<string, unknown> | undefined;
  if (calls === null || typeof calls !== 'object') return null;
  const n = Array.isArray(calls['request_id']) ? calls['request_id'].length : 0;
  if (n === 0) return null;
  for (const f of DEBIT_FIELDS) if (!Array.isArray(calls[f]) || (calls[f] as unknown[]).length !== n) return null;
  return calls as unknown as DebitColumns;
}

/** Ledger lines an event stands for: a batch's calls, one each; any other event, one. */
export function lineCount(e: { type: string; data: unknown }): number {
  return e.type === 'CreditsDebitedBatch' ? (columnsOf(e.data)?.request_id.length ?? 0) : 1;
}

/**
 * The `CreditsDebited` events of a batch, in order, each with its own data and hash chained from
 * the batch's `prev_hash`, exactly as the decider sealed them; null when the batch is malformed.
 */
export function debitLines(data: CreditsDebitedBatch['data']): CreditsDebited[] | null {
  const c = columnsOf(data);
  if (!c) return null;
  const lines: CreditsDebited[] = [];
  let prev = data.prev_hash;
  for (let i = 0; i < c.request_id.length; i++) {
    const body = {
      request_id: c.request_id[i]!,
      endpoint: c.endpoint[i]!,
      channel: c.channel[i]!,
      cost: c.cost[i]!,
      from_allowance: c.from_allowance[i]!,
      from_prepaid: c.from_prepaid[i]!,
      from_overage: c.from_overage[i]!,
      period: data.period,
    };
    const line = sealEvent('CreditsDebited', body, data.at, prev);
    lines.push(line);
    prev = line.data.hash;
  }
  return lines;
}

/** The ledger lines of an event, as a customer sees and verifies them (see `debitLines`). */
export function ledgerLines(e: LedgerEvent): LedgerEvent[] {
  return e.type === 'CreditsDebitedBatch' ? (debitLines(e.data) ?? []) : [e];
}

export type ChainBreakReason = 'not_chained' | 'prev_hash_mismatch' | 'hash_mismatch';

export interface ChainBreak {
  /** Index (in the array given) of the first event that does not fit the chain. */
  index: number;
  reason: ChainBreakReason;
  detail: string;
}

const isHex64 = (x: unknown): x is string => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x);

/**
 * The first broken link of a stream's events, or null when the chain holds. Detects an edited
 * event (`hash_mismatch`) and an inserted or removed one (`prev_hash_mismatch` at the next event).
 * Removing events from the end of the stream leaves a valid (shorter) chain: compare the last
 * hash with one kept elsewhere to detect that.
 */
export function verifyChain(events: ReadonlyArray<{ type: string; data: unknown }>, start: string = GENESIS_HASH): ChainBreak | null {
  let prev = start;
  for (const [index, e] of events.entries()) {
    const data = e.data as Record<string, unknown> | null;
    if (data === null || typeof data !== 'object' || !isHex64(data.prev_hash) || !isHex64(data.hash)) {
      return { index, reason: 'not_chained', detail: `${e.type} at ${index} has no prev_hash/hash` };
    }
    if (data.prev_hash !== prev) {
      return {
        index,
        reason: 'prev_hash_mismatch',
        detail: `${e.type} at ${index} follows ${data.prev_hash.slice(0, 12)}…, but the previous event's hash is ${prev.slice(0, 12)}… (an event was removed, inserted or reordered)`,
      };
    }
    // A batch holds its calls' hashes implicitly: recomputing them from its prev_hash must end on its hash.
    const expected =
      e.type === 'CreditsDebitedBatch'
        ? (debitLines(data as unknown as CreditsDebitedBatch['data'])?.at(-1)?.data.hash ?? null)
        : computeHash(e.type, data as { prev_hash: string });
    if (expected !== data.hash) {
      return { index, reason: 'hash_mismatch', detail: `${e.type} at ${index} was altered after it was written` };
    }
    prev = data.hash;
  }
  return null;
}
