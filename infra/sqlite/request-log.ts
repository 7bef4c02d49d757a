import type { Worker } from 'node:worker_threads';
import type { RequestLogQuery, RequestLogSize, RequestLogStore, RequestRecord } from '../../src/core/request-log.port.js';
import { CallEncoder } from './request-log-batch.js';
import { startWorker } from './worker.js';

/** The embedded request log's file in the data directory, apart from the store: `scores backup` leaves it out. */
export const REQUEST_LOG_FILE = 'request-log.sqlite';

type Answer = { id: number; result?: unknown; failure?: { name: string; message: string } };

/**
 * The request log in a SQLite file of its own (`<data dir>/request-log.sqlite`, WAL,
 * `synchronous = NORMAL`: a crash may lose the last batches, never the file), written and read by
 * a thread of its own (request-log.worker.ts, request-log-db.ts).
 */
export class SqliteRequestLog implements RequestLogStore {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  private lastId = 0;
  /** Calls go to the thread as numbers and strings (request-log-batch.ts), its names numbered here. */
  private encoder = new CallEncoder();

  constructor(file: string) {
    this.worker = startWorker('request-log', { file });
    this.worker.on('message', (msg: Answer | { closed: true }) => {
      if ('closed' in msg) return;
      const waiting = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (this.waiting.size === 0) this.worker.unref();
      if (msg.failure) waiting?.reject(Object.assign(new Error(msg.failure.message), { name: msg.failure.name }));
      else waiting?.resolve(msg.result);
    });
    this.worker.on('error', (err) => {
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    });
    // Idle, the thread never keeps the process alive; an answer awaited does (ask).
    this.worker.unref();
  }

  private ask<T>(op: string, args: unknown[], transfer: ArrayBuffer[] = []): Promise<T> {
    const id = ++this.lastId;
    return new Promise<T>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve: resolve, reject });
      this.worker.postMessage({ id, op, args }, transfer);
    });
  }

  append(records: readonly RequestRecord[]): Promise<void> {
    const batch = this.encoder.encode(records);
    return this.ask<void>('append', [batch], [batch.numbers.buffer as ArrayBuffer]).catch((err: unknown) => {
      // The thread may not have kept this batch's names: the next batch names everything again.
      this.encoder = new CallEncoder();
      throw err;
    });
  }

  list(query: RequestLogQuery): Promise<RequestRecord[]> {
    return this.ask('list', [query]);
  }

  prune(before: number, perAccount: number): Promise<number> {
    return this.ask('prune', [before, perAccount]);
  }

  forget(accountId: string): Promise<number> {
    return this.ask('forget', [accountId]);
  }

  size(): Promise<RequestLogSize> {
    return this.ask('size', []);
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      const done = (msg: { closed?: boolean }) => {
        if (!msg.closed) return;
        this.worker.off('message', done);
        resolve();
      };
      this.worker.on('message', done);
    });
    this.worker.ref();
    this.worker.postMessage({ close: true });
    await closed;
    await this.worker.terminate();
  }
}
