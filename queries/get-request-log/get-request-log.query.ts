import { badRequest } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { REQUEST_LOG_RETENTION_DAYS, type RequestLog } from '../../src/core/request-log.js';
import type { RequestLogQuery, RequestRecord } from '../../src/core/request-log.port.js';
import { accountStream, type AccountEvent } from '../../src/domain/accounts/account.events.js';
import { evolveAccount, initialAccountState, type KeyState } from '../../src/domain/accounts/account.state.js';
import { isRateKey } from '../../src/domain/rate-card.js';
import { KEY_PREFIX as KEY_PREFIX_TEXT, SHOWN_PREFIX_LENGTH } from '../../src/domain/accounts/api-keys.js';
import { parseIntParam } from '../../src/web/int-param.js';
import type { MeteredCall } from '../shared/query-context.js';

export const REQUEST_LOG_LIMIT = { default: 50, min: 1, max: 500 } as const;

/** A page's cursor: the instant (milliseconds) and request id of the last call of the page before. */
export const REQUEST_LOG_CURSOR = /^([0-9]{1,15})_(req_[A-Za-z0-9_-]{16})$/;
/** A request id as `X-Request-Id` carries it. */
export const REQUEST_ID = /^req_[A-Za-z0-9_-]{16}$/;
/** A status class: `2xx`, `3xx`, `4xx` or `5xx`. */
export const STATUS_CLASS = /^[2-5]xx$/;
/** A UTC day. */
export const DAY = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
/** A key as the account page names it: its clear prefix, `sk_live_` and 6 characters. */
export const KEY_PREFIX = new RegExp(`^${KEY_PREFIX_TEXT}[A-Za-z0-9_-]{${SHOWN_PREFIX_LENGTH - KEY_PREFIX_TEXT.length}}$`);

/** One call of one of your keys, answered or refused. */
export interface RequestLogEntryResponse {
  /** The call's `X-Request-Id` (over MCP, the id of its JSON-RPC request): the ledger entry of its charge names it too. */
  request_id: string;
  /** When the call ended: ISO 8601 UTC, to the millisecond. */
  at: string;
  /** The key's name, as the account page shows it. */
  key_name: string;
  /** The key's clear prefix (`sk_live_` and 6 characters): what names a key here, as on the account page. */
  key_prefix: string;
  /** `rest` or `mcp`. */
  channel: string;
  /** The rate-card key of the operation (`scores`, `history`, …); null for a call that named none (an MCP POST refused as a whole). */
  operation: string | null;
  /** The MCP tool called; null over REST. */
  tool: string | null;
  /** The HTTP method. */
  method: string;
  /** The route's template (`/v1/scores/{ticker}`), or `/mcp/http`. */
  path: string;
  /**
   * The HTTP status; for an MCP tool call, the status its REST twin would have answered (499: the client left before the answer).
   * @isInt
   */
  status: number;
  /** The problem's stable code when the call was refused (`tier`, `credits_exhausted`, `rate_limited`, `not_found`, …); null when answered. */
  code: string | null;
  /**
   * Credits the call was charged (0 when refused or free).
   * @isInt
   */
  credits: number;
  /** From the request's arrival to its answer, in milliseconds. */
  latency_ms: number;
}

export interface RequestLogPageResponse {
  /** Newest first. */
  requests: RequestLogEntryResponse[];
  /** Pass as `cursor` for the next (older) page, with the same filters; null on the last page. */
  next_cursor: string | null;
  /**
   * Calls on this page.
   * @isInt
   */
  count: number;
  /**
   * How many days calls are kept.
   * @isInt
   */
  kept_days: number;
}

/** The filters of a listing, as sent (query-string form). */
export interface RequestLogFilters {
  /** A key's prefix. */
  key?: string;
  status?: string;
  operation?: string;
  day?: string;
  request_id?: string;
  limit?: string;
  cursor?: string;
}

const invalidParameter = (parameter: string, message: string) => badRequest(`${parameter} ${message}`, { errors: [{ parameter, message }] });

function check(name: keyof RequestLogFilters, value: string | undefined, rule: RegExp | ((v: string) => boolean), message: string): void {
  if (value === undefined) return;
  if (typeof rule === 'function' ? !rule(value) : !rule.test(value)) throw invalidParameter(name, message);
}

/**
 * The store's query of an account's listing: each filter checked (400 naming it); a key named by
 * its prefix is each of the account's keys with that prefix (`keys`: accountKeys).
 */
export function requestLogQuery(accountId: string, f: RequestLogFilters, keys: ReadonlyMap<string, KeyState>): RequestLogQuery {
  check('status', f.status, STATUS_CLASS, 'must be 2xx, 3xx, 4xx or 5xx');
  check('operation', f.operation, isRateKey, 'must be a rate-card key (GET /v1/usage lists them)');
  check('day', f.day, (d) => DAY.test(d) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d), 'must be a day YYYY-MM-DD (UTC)');
  check('request_id', f.request_id, REQUEST_ID, 'must be a request id req_… as X-Request-Id gives it');
  check('key', f.key, KEY_PREFIX, 'must be a key prefix sk_live_… as the account page shows it (14 characters)');
  check('cursor', f.cursor, REQUEST_LOG_CURSOR, 'is not a cursor this listing gave');
  const limit = parseIntParam('limit', f.limit, REQUEST_LOG_LIMIT);
  const from = f.day === undefined ? undefined : Date.parse(`${f.day}T00:00:00Z`);
  const cursor = f.cursor === undefined ? null : REQUEST_LOG_CURSOR.exec(f.cursor)!;
  return {
    account_id: accountId,
    key_ids: f.key === undefined ? undefined : [...keys.values()].filter((k) => k.prefix === f.key).map((k) => k.key_id),
    status_class: f.status === undefined ? undefined : Number(f.status[0]),
    operation: f.operation,
    request_id: f.request_id,
    from,
    to: from === undefined ? undefined : from + 86_400_000,
    after: cursor ? { at: Number(cursor[1]), request_id: cursor[2]! } : undefined,
    limit,
  };
}

/** The account's keys, every one it ever had, by id: names and prefixes as the account's own stream holds them. */
export async function accountKeys(log: Pick<EventStore, 'readStream'>, accountId: string): Promise<Map<string, KeyState>> {
  let state = initialAccountState();
  for (const event of await log.readStream(accountStream(accountId))) state = evolveAccount(state, event as unknown as AccountEvent);
  return state.keys;
}

export function entryOf(r: RequestRecord, keys: ReadonlyMap<string, KeyState>): RequestLogEntryResponse {
  const key = keys.get(r.key_id);
  return {
    request_id: r.request_id,
    at: new Date(r.at).toISOString(),
    // Every key an account had is in its stream; a call is never of another account's key.
    key_name: key?.name ?? '',
    key_prefix: key?.prefix ?? '',
    channel: r.channel,
    operation: r.operation,
    tool: r.tool,
    method: r.method,
    path: r.path,
    status: r.status,
    code: r.code,
    credits: r.credits,
    latency_ms: r.latency_ms,
  };
}

/** A page of an account's request log, newest first; one more call is read to tell whether another page follows. */
export async function readRequestLog(requests: Pick<RequestLog, 'list'>, keys: ReadonlyMap<string, KeyState>, query: RequestLogQuery): Promise<RequestLogPageResponse> {
  const rows = await requests.list({ ...query, limit: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    requests: page.map((r) => entryOf(r, keys)),
    next_cursor: rows.length > query.limit && last ? `${last.at}_${last.request_id}` : null,
    count: page.length,
    kept_days: REQUEST_LOG_RETENTION_DAYS,
  };
}

/** `GET /v1/requests`: the caller's account's calls, filtered and paged. Free. */
export async function run(call: MeteredCall, filters: RequestLogFilters): Promise<RequestLogPageResponse> {
  const accountId = call.principal.account_id;
  const keys = await accountKeys(call.ctx.events, accountId);
  const page = await readRequestLog(call.ctx.requests, keys, requestLogQuery(accountId, filters, keys));
  await call.charge('requests');
  return page;
}
