import type { Clock } from './clock.js';
import type { RequestLogQuery, RequestLogSize, RequestLogStore, RequestRecord } from './request-log.port.js';

/** How long a call is kept, and shown. */
export const REQUEST_LOG_RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;

export interface RequestLogOptions {
  /** The wall clock: when a call ended, and what is 30 days old. */
  clock: Clock;
  /** How often the buffer is written (default 1 s): at most this much is lost to a crash. */
  flushMs?: number;
  /** A buffer this long is written at once, without waiting for the timer. */
  batchRows?: number;
  /** The most calls kept per account (its newest), whatever their age. */
  perAccount?: number;
  /** How often calls older than the retention (and beyond `perAccount`) are deleted. */
  pruneEveryMs?: number;
  onError?: (err: unknown, what: string) => void;
}

export const REQUEST_LOG_DEFAULTS = {
  flushMs: 1000,
  batchRows: 500,
  perAccount: 1_000_000,
  pruneEveryMs: 10 * 60_000,
} as const;

/** Refused calls logged per account and second, in a process: refusals cost nothing, so a flood of them is bounded here. */
export const REFUSALS_LOGGED_PER_SECOND = 100;
/** Rows the buffer holds at most while the store does not take them (a store down); later ones are dropped and counted. */
const MAX_BUFFERED = 100_000;

/**
 * The request log's writer and reader. `record` only pushes the call onto a buffer: the metered
 * path never waits for the store. The buffer is written every `flushMs` (or at `batchRows`),
 * in one batch, and on `close` (a graceful stop): a crash loses at most the calls of the last
 * `flushMs`, which the ledger still holds if they were charged. Reads write the buffer first, so
 * a caller sees its own calls at once.
 *
 * Bounded two ways: each account keeps its newest `perAccount` calls of the last 30 days (a
 * prune every `pruneEveryMs`), and refused calls, which cost nothing and so could be sent at any
 * rate, are logged at most REFUSALS_LOGGED_PER_SECOND per account and second (answered calls are
 * bounded by the account's request rate). Calls not logged are counted (`dropped`).
 */
export class RequestLog {
  private buffer: RequestRecord[] = [];
  private writing: Promise<void> = Promise.resolve();
  /** A flush waiting for the write in progress: it takes the buffer when it starts. */
  private queued: Promise<void> | null = null;
  private readonly refusals = new Map<string, { second: number; n: number }>();
  private readonly timer: NodeJS.Timeout;
  private lastPrune = -Infinity;
  private closed = false;
  /** Calls not logged: refusals over the per-second bound, or a buffer full while the store failed. */
  dropped = 0;

  private readonly options: Required<RequestLogOptions>;

  constructor(
    private readonly store: RequestLogStore,
    options: RequestLogOptions,
  ) {
    this.options = { ...REQUEST_LOG_DEFAULTS, onError: () => undefined, ...options };
    this.timer = setInterval(() => void this.tick(), this.options.flushMs);
    // The log never keeps a process alive (a CLI command ends when its work does).
    this.timer.unref();
  }

  /** The wall-clock instant of now, in milliseconds (what a call's `at` is). */
  now(): number {
    return this.options.clock.now().getTime();
  }

  /** Calls waiting in the buffer. */
  get pending(): number {
    return this.buffer.length;
  }

  record(call: RequestRecord): void {
    if (this.closed) return;
    if (call.status >= 400 && !this.refusalAllowed(call.account_id, call.at)) return;
    if (this.buffer.length >= MAX_BUFFERED) {
      this.dropped++;
      return;
    }
    this.buffer.push(call);
    if (this.buffer.length >= this.options.batchRows) void this.flush();
  }

  private refusalAllowed(accountId: string, at: number): boolean {
    const second = Math.floor(at / 1000);
    const seen = this.refusals.get(accountId);
    if (!seen || seen.second !== second) {
      // One entry per account refused in the current second: older ones go with the first of a new second.
      if (this.refusals.size > 10_000) this.refusals.clear();
      this.refusals.set(accountId, { second, n: 1 });
      return true;
    }
    if (seen.n >= REFUSALS_LOGGED_PER_SECOND) {
      this.dropped++;
      return false;
    }
    seen.n++;
    return true;
  }

  /**
   * Writes what the buffer holds once any write in progress is done. One batch is in flight at a
   * time: calls that end meanwhile wait in the buffer (bounded by MAX_BUFFERED), so a store that
   * falls behind (its thread yields the CPU to serving under full load) holds no pile of batches.
   */
  flush(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.writing.then(() => {
      this.queued = null;
      return this.writeBuffer();
    });
    this.queued = next;
    this.writing = next;
    return next;
  }

  private async writeBuffer(): Promise<void> {
    const batch = this.buffer;
    this.buffer = [];
    if (!batch.length) return;
    try {
      await this.store.append(batch);
    } catch (err) {
      this.options.onError(err, 'request log not written; its calls are kept to try again');
      const room = MAX_BUFFERED - this.buffer.length;
      this.dropped += Math.max(0, batch.length - room);
      this.buffer = [...batch.slice(0, Math.max(0, room)), ...this.buffer];
    }
  }

  private async tick(): Promise<void> {
    await this.flush();
    if (this.now() - this.lastPrune >= this.options.pruneEveryMs) {
      this.lastPrune = this.now();
      await this.prune().catch((err: unknown) => this.options.onError(err, 'request log not pruned; again at the next pass'));
    }
  }

  /** The oldest instant still kept (calls before it are pruned, and never shown meanwhile). */
  keptSince(): number {
    return this.now() - REQUEST_LOG_RETENTION_DAYS * DAY_MS;
  }

  /** Deletes the calls older than the retention, and each account's beyond `perAccount`. */
  async prune(): Promise<number> {
    await this.flush();
    return this.store.prune(this.keptSince(), this.options.perAccount);
  }

  /** An account's calls, newest first, within the retention. */
  async list(query: RequestLogQuery): Promise<RequestRecord[]> {
    await this.flush();
    return this.store.list({ ...query, from: Math.max(query.from ?? -Infinity, this.keptSince()) });
  }

  /** Every call of an account, buffered or stored, deleted (the account is forgotten). */
  async forget(accountId: string): Promise<number> {
    this.buffer = this.buffer.filter((r) => r.account_id !== accountId);
    await this.writing;
    return this.store.forget(accountId);
  }

  async size(): Promise<RequestLogSize> {
    await this.flush();
    return this.store.size();
  }

  /** Writes the buffer and closes the store: a graceful stop loses nothing. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    await this.flush();
    this.closed = true;
    await this.store.close();
  }
}
