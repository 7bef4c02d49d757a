import { AppError, badRequest } from '../../src/core/errors.js';
import type { ReadStore, Filter } from '../../src/core/read-store.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import type { LedgerHead } from '../../src/domain/ledger/ledger-head.js';
import { ledgerEntries, type LedgerEntryDoc } from '../../projections/usage/usage.projection.js';
import { statementLines, type LedgerEntryResponse } from '../shared/ledger-lines.js';
import type { MeteredCall } from '../shared/query-context.js';
import { parseIntParam } from '../../src/web/int-param.js';

export const USAGE_LEDGER_DEFAULT_LIMIT = 100;
export const USAGE_LEDGER_MAX_LIMIT = 1000;
export const USAGE_LEDGER_LIMIT = { default: USAGE_LEDGER_DEFAULT_LIMIT, min: 1, max: USAGE_LEDGER_MAX_LIMIT } as const;

export interface UsageLedgerParams {
  accountId: string;
  /** `YYYY-MM` (UTC month); absent = every month. */
  month?: string;
  /** Entries per page: default 100, at most 1000. */
  limit?: number;
  /** `next_cursor` of the previous page (same account and month). */
  cursor?: string | null;
}

/**
 * The service's signature over the head of your ledger: its last line, `seq` and `hash`, at `at`.
 * The signature covers the statement `scores-ledger-head:v1\n<account_id>\n<seq>\n<hash>\n<at>\n<key_id>`
 * (Ed25519, base64); the keys are at `/.well-known/scores-ledger-keys.json`. Keep it: a later
 * ledger whose line `seq` has another hash was rewritten.
 */
export interface SignedLedgerHeadResponse {
  /** Always `scores-ledger-head:v1`. */
  statement: string;
  account_id: string;
  /**
   * The last line's seq.
   * @isInt
   */
  seq: number;
  /** The last line's hash. */
  hash: string;
  /** When the service signed it: an ISO 8601 UTC instant, kept as the text signed (no date type, which could respell it). */
  at: string;
  /** The signing key's id, as the well-known key list names it. */
  key_id: string;
  /** Always `Ed25519`. */
  alg: string;
  /** Ed25519 signature of the statement, base64. */
  signature: string;
}

export interface LedgerPageResponse {
  /**
   * The month asked for; null when every month is listed.
   * @format month
   */
  month: string | null;
  /** Newest first. */
  entries: LedgerEntryResponse[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next_cursor: string | null;
  /**
   * Entries on this page.
   * @isInt
   */
  count: number;
  /** The head of your whole ledger (its newest line, whatever the page), signed now; null when the service signs no heads. */
  signed_head: SignedLedgerHeadResponse | null;
}

/** A page of the ledger, before the controller adds the signed head. */
export type LedgerPage = Omit<LedgerPageResponse, 'signed_head'>;

/** A calendar month `YYYY-MM` (the `month` parameter; the OpenAPI document declares this pattern). */
export const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** 400 naming the parameter, as every parameter error does. */
const invalidParameter = (parameter: string, message: string) => badRequest(`${parameter} ${message}`, { errors: [{ parameter, message }] });

/** A page's cursor as the document declares it: the seq of the newest line the page shows. */
export const LEDGER_CURSOR = /^[0-9]{1,15}$/;

function parseCursor(cursor: string | null | undefined): number | null {
  if (cursor === undefined || cursor === null) return null;
  const seq = LEDGER_CURSOR.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(seq)) throw invalidParameter('cursor', 'is not valid for this query');
  return seq;
}

/**
 * An account's credit ledger (every charge, pack, plan change and alert), newest first, paged.
 * The `ledger_entries` read model says which events of the log hold the page's lines; the lines
 * are read from the log, where each is stored once (a batch of calls as one event).
 */
export async function getUsageLedger(reads: ReadStore, log: Pick<EventStore, 'readStream'>, params: UsageLedgerParams): Promise<LedgerPage> {
  const month = params.month ?? null;
  if (month !== null && !MONTH.test(month)) throw invalidParameter('month', 'must be YYYY-MM');
  const limit = params.limit ?? USAGE_LEDGER_DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw invalidParameter('limit', 'must be a whole number of at least 1');
  if (limit > USAGE_LEDGER_MAX_LIMIT) {
    const message = `is at most ${USAGE_LEDGER_MAX_LIMIT}`;
    throw new AppError('limit_exceeded', `limit ${message}`, { maximum: USAGE_LEDGER_MAX_LIMIT, errors: [{ parameter: 'limit', message }] });
  }
  const before = parseCursor(params.cursor);
  const filter: Filter<LedgerEntryDoc> = { account_id: params.accountId };
  if (month !== null) filter.period = month;
  if (before !== null) filter.seq = { $lte: before };
  // Every entry holds at least one line: limit + 1 entries hold the page and tell whether another follows.
  const { items } = await reads.find(ledgerEntries, filter, { sort: [['seq', -1]], limit: limit + 1 });
  if (items.length === 0) return { month, entries: [], next_cursor: null, count: 0 };
  const lines: LedgerEntryResponse[] = [];
  for (const entry of items) {
    if (lines.length > limit) break;
    const events = await log.readStream(ledgerStream(params.accountId), { fromRevision: entry.revision, maxCount: entry.events });
    if (events.length !== entry.events || events[0]?.revision !== entry.revision || events.at(-1)!.revision !== entry.revision + entry.events - 1) {
      throw new AppError('internal', `ledger event ${entry.revision} of account ${params.accountId} is missing from the log`);
    }
    const own = statementLines(entry, events);
    for (let i = own.length - 1; i >= 0; i--) if (before === null || own[i]!.seq <= before) lines.push(own[i]!);
  }
  const page = lines.slice(0, limit);
  const next = lines[limit];
  return { month, entries: page, next_cursor: next ? String(next.seq) : null, count: page.length };
}

/** The account's last ledger line (`seq`, `hash`), read where the `ledger_entries` read model points into the log; null without one. */
export async function ledgerHead(reads: ReadStore, log: Pick<EventStore, 'readStream'>, accountId: string): Promise<Omit<LedgerHead, 'at'> | null> {
  const [entry] = (await reads.find(ledgerEntries, { account_id: accountId }, { sort: [['seq', -1]], limit: 1 })).items;
  if (!entry) return null;
  // The entry may be a range of events: its last line is in its last event.
  const events = await log.readStream(ledgerStream(accountId), { fromRevision: entry.revision, maxCount: entry.events });
  const last = events.length === entry.events ? statementLines(entry, events).at(-1) : undefined;
  if (!last) throw new AppError('internal', `ledger event ${entry.revision} of account ${accountId} is missing from the log`);
  return { account_id: accountId, seq: last.seq, hash: last.hash };
}

export async function run(
  call: MeteredCall,
  month: string | undefined,
  limit: string | undefined,
  cursor: string | undefined,
): Promise<LedgerPageResponse> {
  const p = call.principal;
  // Read your own writes: the ledger read model includes this account's last charge.
  await call.ctx.ledgerCaughtUp(p.account_id);
  // Parsed here like every other integer parameter: "abc" or "" get the same 400 wording, a
  // value above 1,000 the spec's 422 (tsoa answered "invalid float number").
  const rows = parseIntParam('limit', limit, USAGE_LEDGER_LIMIT);
  const page = await getUsageLedger(call.ctx.reads, call.ctx.events, { accountId: p.account_id, month, limit: rows, cursor });
  const head = await ledgerHead(call.ctx.reads, call.ctx.events, p.account_id);
  await call.charge('usage_ledger');
  return { ...page, signed_head: head && call.ctx.signHead(head) };
}
