import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
} from '../../src/core/event-store.port.js';
import type { SqliteDb } from './database.js';

const POSITION_WIDTH = 20;
export const encodePosition = (n: number | bigint) => n.toString().padStart(POSITION_WIDTH, '0');
const decodePosition = (p: string | null | undefined) => (p ? Number(p) : 0);

interface EventRow {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
}

interface Pending {
  appends: StreamAppend[];
  resolve(results: AppendResult[]): void;
  reject(err: unknown): void;
}

/**
 * The embedded event log: one table in the SQLite file.
 *
 * Appends that arrive in the same turn of the event loop are committed together in one
 * transaction (group commit): one fsync for many writers, each still checked against its own
 * expected revision and failing alone. A promise resolves only after its transaction committed.
 */
export class SqliteEventStore implements EventStore {
  private queue: Pending[] = [];
  private flushScheduled = false;
  private readonly wakers = new Set<() => void>();
  private closed = false;
  private readonly stmts;

  constructor(
    private readonly db: SqliteDb,
    private readonly clock: Clock,
    private readonly options: { pollMs?: number } = {},
  ) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position    INTEGER PRIMARY KEY AUTOINCREMENT,
        id          TEXT NOT NULL UNIQUE,
        stream_id   TEXT NOT NULL,
        revision    INTEGER NOT NULL,
        type        TEXT NOT NULL,
        data        TEXT NOT NULL,
        metadata    TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        UNIQUE (stream_id, revision)
      );
    `);
    this.stmts = {
      head: db.prepare<[string], { revision: number | null }>(
        'SELECT max(revision) AS revision FROM events WHERE stream_id = ?',
      ),
      insert: db.prepare(
        `INSERT INTO events (id, stream_id, revision, type, data, metadata, recorded_at)
         VALUES (@id, @stream_id, @revision, @type, @data, @metadata, @recorded_at)`,
      ),
      readStream: db.prepare<[string, number, number], EventRow>(
        'SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?',
      ),
      readAll: db.prepare<[number, number], EventRow>('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?'),
      last: db.prepare<[], { position: number | null }>('SELECT max(position) AS position FROM events'),
    };
  }

  append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision = 'any'): Promise<AppendResult> {
    return this.appendMany([{ streamId, events, expectedRevision }]).then((r) => r[0]!);
  }

  appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ appends, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const outcomes: ({ ok: true; results: AppendResult[] } | { ok: false; error: unknown })[] = [];
    const writeOne = this.db.transaction((p: Pending) => this.write(p.appends));
    const writeAll = this.db.transaction(() => {
      for (const p of batch) {
        try {
          // A nested transaction is a savepoint: a failing writer rolls back alone.
          outcomes.push({ ok: true, results: writeOne(p) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
    try {
      writeAll();
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.results);
      else p.reject(o.error);
    });
    this.wake();
  }

  private write(appends: StreamAppend[]): AppendResult[] {
    const recordedAt = this.clock.now().toISOString();
    return appends.map(({ streamId, events, expectedRevision = 'any' }) => {
      const current = this.stmts.head.get(streamId)?.revision ?? null;
      checkExpected(streamId, expectedRevision, current);
      let revision = current ?? -1;
      let position = 0;
      for (const e of events) {
        revision += 1;
        const info = this.stmts.insert.run({
          id: e.id ?? randomUUID(),
          stream_id: streamId,
          revision,
          type: e.type,
          data: JSON.stringify(e.data),
          metadata: JSON.stringify(e.metadata ?? {}),
          recorded_at: recordedAt,
        });
        position = Number(info.lastInsertRowid);
      }
      return { nextExpectedRevision: revision, position: encodePosition(position) };
    });
  }

  readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const rows = this.stmts.readStream.all(streamId, options.fromRevision ?? 0, options.maxCount ?? -1);
    return Promise.resolve(rows.map(toRecorded));
  }

  readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    return Promise.resolve(this.readAllSync(options.after, options.maxCount ?? 1000));
  }

  private readAllSync(after: string | null | undefined, max: number): RecordedEvent[] {
    return this.stmts.readAll.all(decodePosition(after), max).map(toRecorded);
  }

  headPosition(): Promise<string | null> {
    const p = this.stmts.last.get()?.position;
    return Promise.resolve(p == null ? null : encodePosition(p));
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    let stopped = false;
    let wake: (() => void) | null = null;
    const pollMs = this.options.pollMs ?? 200;
    const max = options.maxBatch ?? 200;
    const waitForMore = () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.wakers.delete(done);
          wake = null;
          resolve();
        };
        const timer = setTimeout(done, pollMs);
        wake = done;
        this.wakers.add(done);
      });

    const loop = async () => {
      let after = options.after ?? null;
      let caughtUp = false;
      const target = (await this.headPosition()) ?? '';
      while (!stopped) {
        let batch: RecordedEvent[];
        try {
          batch = this.readAllSync(after, max);
        } catch (err) {
          if (stopped || this.closed) return;
          throw err;
        }
        if (batch.length > 0) {
          await options.onEvents(batch);
          after = batch[batch.length - 1]!.position;
        }
        if (!caughtUp && (batch.length < max || (after ?? '') >= target)) {
          caughtUp = true;
          options.onCaughtUp?.();
        }
        if (batch.length < max && !stopped) await waitForMore();
      }
    };
    const running = loop().catch((err) => {
      stopped = true;
      options.onError?.(err);
    });
    return {
      stop: async () => {
        stopped = true;
        const w = wake;
        w?.();
        await running;
      },
    };
  }

  private wake(): void {
    for (const w of [...this.wakers]) w();
  }

  close(): Promise<void> {
    this.closed = true;
    this.wake();
    return Promise.resolve();
  }
}

function checkExpected(streamId: string, expected: ExpectedRevision, current: number | null): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && current === null) ||
    (expected === 'stream_exists' && current !== null) ||
    (typeof expected === 'number' && expected === current);
  if (!ok) throw new ConcurrencyError(streamId, expected, current);
}

function toRecorded(r: EventRow): RecordedEvent {
  return {
    id: r.id,
    streamId: r.stream_id,
    type: r.type,
    data: JSON.parse(r.data) as unknown,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    revision: r.revision,
    position: encodePosition(r.position),
    recordedAt: r.recorded_at,
  };
}
