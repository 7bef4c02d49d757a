/**
 * The request log: every call an account's keys made over REST and MCP, answered or refused, kept
 * a stated time (30 days) for the account to see (`GET /v1/requests`, the account page). It is an
 * operational record, not a ledger fact: it is never in the event log, a crash may lose its last
 * second (src/core/request-log.ts), and what a call was charged stays the ledger's to say.
 */

export type RequestChannel = 'rest' | 'mcp';

/** One call of one key, as it ended. */
export interface RequestRecord {
  /** `X-Request-Id` of the call (over MCP, of the JSON-RPC request): the ledger entry of its charge names it too. */
  request_id: string;
  account_id: string;
  key_id: string;
  /** When the call ended: milliseconds since the epoch, on the wall clock. */
  at: number;
  channel: RequestChannel;
  /** The rate-card key of the operation; null when the call named none the service knows (a refused MCP POST, an unknown tool). */
  operation: string | null;
  /** The MCP tool called (a known one); null over REST. */
  tool: string | null;
  method: string;
  /** The route's template (`/v1/scores/{ticker}`), never the path as sent; `/mcp/http` for MCP. */
  path: string;
  /** The HTTP status; for an MCP tool call, the status its REST twin would have answered. */
  status: number;
  /** The problem's stable code when the call was refused; null when answered. */
  code: string | null;
  /** Credits charged (0 for a refused or free call). */
  credits: number;
  /** From the request's arrival to its answer, in milliseconds (one decimal). */
  latency_ms: number;
}

/** Which of an account's calls to list: newest first, each condition optional. */
export interface RequestLogQuery {
  account_id: string;
  /** Calls of any of these keys. */
  key_ids?: readonly string[];
  /** 2, 3, 4 or 5: the status's hundred. */
  status_class?: number;
  operation?: string;
  request_id?: string;
  /** Calls that ended at or after this instant (milliseconds). */
  from?: number;
  /** Calls that ended before this instant (milliseconds). */
  to?: number;
  /** The page after this call (the last one of the previous page). */
  after?: { at: number; request_id: string };
  limit: number;
}

/** What the store holds: rows, and bytes on disk (the request log's storage cost). */
export interface RequestLogSize {
  rows: number;
  bytes: number;
}

/**
 * Where the request log is kept: a file of its own in the data directory (embedded) or a
 * PostgreSQL schema of its own, never beside the books.
 */
export interface RequestLogStore {
  /** Writes a batch; every row or none. */
  append(records: readonly RequestRecord[]): Promise<void>;
  /** Newest first (by `at`, then `request_id`), `limit` at most. */
  list(query: RequestLogQuery): Promise<RequestRecord[]>;
  /**
   * Deletes every call that ended before `before`, and of an account holding more than
   * `perAccount` calls its oldest beyond them; resolves with the rows deleted.
   */
  prune(before: number, perAccount: number): Promise<number>;
  /** Deletes every call of an account (a forgotten account); resolves with the rows deleted. */
  forget(accountId: string): Promise<number>;
  size(): Promise<RequestLogSize>;
  close(): Promise<void>;
}
