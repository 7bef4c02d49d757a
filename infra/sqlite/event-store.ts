import { LogWakeups, subscribeCatchUp } from '../../src/core/catch-up-subscription.js';
import { GroupCommitQueue } from '../../src/core/group-commit.js';
import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import { debitData, debitRecordForm, debitRecordId, DEBIT_RECORD_TYPE } from '../../src/domain/ledger/debit-record.js';
import { plainEncoding } from '../../src/core/event-store.port.js';
import type {
  AppendResult,
  EventCodec,
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
import { uuidV7 } from './uuid-v7.js';
import { startWorker } from './worker.js';
import { EVENTS_DDL, addRecordKeyColumn, groupWriter, requestId, type GroupOutcome, type SerializedGroup } from './event-writes.js';

const POSITION_WIDTH = 20;
export const encodePosition = (n: number | bigint) => n.toString().padStart(POSITION_WIDTH, '0');
const decodePosition = (p: string | null | undefined) => (p ? Number(p) : 0);

/** A row of the `events` table. */
export interface EventRow {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
}

/** A row of the log as read: an `events` row, or a `debit_records` row (whose `data` is null). */
interface LogRow extends Omit<EventRow, 'id' | 'stream_id' | 'data' | 'recorded_at'> {
  id: string | null;
  /** A record's: the code of its stream's name. */
  stream_id: string | number;
  data: string | null;
  recorded_at: string | number;
  request: Buffer | string | null;
  endpoint: number | null;
  channel: number | null;
  cost: number | null;
  from_allowance: number | null;
  from_prepaid: number | null;
  from_overage: number | null;
  at: number | null;
  period: string | null;
  prev_hash: Buffer | null;
  hash: Buffer | null;
  /** A record's: the code of its call's key, when it names one. */
  key: number | null;
}

const EVENT_COLUMNS = `position, id, stream_id, revision, type, data, metadata, recorded_at, NULL AS request, NULL AS endpoint, NULL AS channel,
  NULL AS cost, NULL AS from_allowance, NULL AS from_prepaid, NULL AS from_overage, NULL AS at, NULL AS period, NULL AS prev_hash, NULL AS hash, NULL AS key`;
/** A record's stream, endpoint and channel are codes of `log_names` here (`SqliteEventStore.nameOf` reads them). */
const RECORD_COLUMNS = `d.position, NULL, d.stream, d.revision, '${DEBIT_RECORD_TYPE}', NULL, '{}', d.recorded, d.request, d.endpoint, d.channel,
  d.cost, d.from_allowance, d.from_prepaid, d.from_overage, d.at, d.period, d.prev_hash, d.hash, d.key`;
const RECORD_JOINS = `debit_records d`;

interface Pending {
  group: SerializedGroup;
  resolve(results: AppendResult[]): void;
  reject(err: unknown): void;
}

export interface SqliteEventStoreOptions {
  /** How often to look for other processes' appends while following the log. */
  pollMs?: number;
  /**
   * `worker` (default for a file): commits run on a writer thread, so their fsync never blocks
   * the event loop. `inline`: on the calling thread (`:memory:` databases, tools).
   */
  writer?: 'worker' | 'inline';
  /** How event data is stored (default: as given). */
  codec?: EventCodec;
  /**
   * `records` (default): a lone metered call's debit is stored as a fixed-width row of
   * `debit_records` (src/domain/ledger/debit-record.ts); `events`: as any event, a row of `events` (the
   * form before records, which a store may hold too: both are read).
   */
  debits?: 'records' | 'events';
}

/**
 * The embedded event log: one table in the SQLite file.
 *
 * Appends that arrive while a commit is in flight are committed together in the next
 * transaction (group commit): one fsync for many writers, each still checked against its own
 * expected revision and failing alone. A promise resolves only after its transaction committed
 * with a full fsync.
 */
export class SqliteEventStore implements EventStore {
  private readonly pending = new GroupCommitQueue<Pending>((batch) => this.flush(batch));
  /** Commits made through this store wake its subscriptions; one busy when a commit lands reads again at once. */
  private readonly wakeups = new LogWakeups();
  private closed = false;
  private readonly stmts;
  private readonly commit: (groups: SerializedGroup[], recordedAt: string) => Promise<GroupOutcome[]>;
  private readonly closeWriter: () => Promise<void>;
  private readonly writerReady: Promise<void>;
  private readonly codec: EventCodec;
  /** `log_names` as read so far: a code, once written, always names the same text. */
  private readonly names = new Map<number, string>();

  constructor(
    private readonly db: SqliteDb,
    private readonly clock: Clock,
    private readonly options: SqliteEventStoreOptions = {},
  ) {
    db.exec(EVENTS_DDL);
    addRecordKeyColumn(db);
    this.codec = options.codec ?? plainEncoding;
    this.stmts = {
      readStream: db.prepare<{ stream: string; from: number; max: number }, LogRow>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = @stream AND revision >= @from
         UNION ALL SELECT ${RECORD_COLUMNS} FROM ${RECORD_JOINS} WHERE d.stream = (SELECT code FROM log_names WHERE name = @stream) AND d.revision >= @from
         ORDER BY revision LIMIT @max`,
      ),
      readAll: db.prepare<{ after: number; max: number }, LogRow>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE position > @after
         UNION ALL SELECT ${RECORD_COLUMNS} FROM ${RECORD_JOINS} WHERE d.position > @after
         ORDER BY position LIMIT @max`,
      ),
      name: db.prepare<[number], { name: string }>('SELECT name FROM log_names WHERE code = ?'),
      last: db.prepare<[], { position: number | null }>(
        'SELECT max(coalesce((SELECT max(position) FROM events), 0), coalesce((SELECT max(position) FROM debit_records), 0)) AS position',
      ),
    };
    const useWorker = (options.writer ?? 'worker') === 'worker' && !db.memory;
    if (useWorker) {
      const worker = startWorker('event-writer', { file: db.name });
      let ready!: () => void;
      this.writerReady = new Promise((resolve, reject) => {
        ready = resolve;
        worker.once('error', reject);
      });
      this.writerReady.catch(() => undefined); // an append reports the failure too
      let seq = 0;
      const waiting = new Map<number, { resolve(o: GroupOutcome[]): void; reject(e: unknown): void }>();
      worker.on('message', (msg: { ready?: true; id: number; outcomes?: GroupOutcome[]; failure?: { name: string; message: string } }) => {
        if (msg.ready) return ready();
        const w = waiting.get(msg.id);
        if (!w) return;
        waiting.delete(msg.id);
        if (msg.outcomes) w.resolve(msg.outcomes);
        else w.reject(Object.assign(new Error(msg.failure?.message ?? 'write failed'), { name: msg.failure?.name ?? 'Error' }));
      });
      worker.on('error', (err) => {
        for (const w of waiting.values()) w.reject(err);
        waiting.clear();
      });
      this.commit = (groups, recordedAt) =>
        new Promise((resolve, reject) => {
          const id = ++seq;
          waiting.set(id, { resolve, reject });
          worker.postMessage({ id, groups, recordedAt });
        });
      this.closeWriter = async () => {
        await worker.terminate();
      };
    } else {
      const write = groupWriter(db);
      this.commit = (groups, recordedAt) => Promise.resolve(write(groups, recordedAt));
      this.closeWriter = () => Promise.resolve();
      this.writerReady = Promise.resolve();
    }
  }

  /**
   * Resolves once the writer thread has opened its connection. Opening the services waits for it,
   * so a process that has just started (a restart) does not make its first call wait for a thread
   * to boot and compile (some 300 ms under tsx).
   */
  ready(): Promise<void> {
    return this.writerReady;
  }

  append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision = 'any'): Promise<AppendResult> {
    return this.appendMany([{ streamId, events, expectedRevision }]).then((r) => r[0]!);
  }

  appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    let group: SerializedGroup;
    try {
      group = {
        appends: appends.map((a) => ({
          streamId: a.streamId,
          expectedRevision: a.expectedRevision ?? 'any',
          events: a.events.map((e) => {
            const form = debitRecordForm(e, this.options.debits);
            return form
              ? { id: '', type: e.type, data: '', metadata: '', record: form.record, key: form.key }
              : { id: e.id ?? uuidV7(), type: e.type, data: JSON.stringify(this.codec.encode(e.type, e.data)), metadata: JSON.stringify(e.metadata ?? {}) };
          }),
        })),
      };
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ group, resolve, reject });
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    let outcomes: GroupOutcome[];
    try {
      outcomes = await this.commit(
        batch.map((p) => p.group),
        this.clock.now().toISOString(),
      );
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.results.map((r) => ({ nextExpectedRevision: r.nextExpectedRevision, position: encodePosition(r.position) })));
      else if (o.error.kind === 'concurrency') p.reject(new ConcurrencyError(o.error.streamId, o.error.expected, o.error.actual));
      else p.reject(Object.assign(new Error(o.error.message), { name: o.error.name }));
    });
    this.wake();
  }

  readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const rows = this.stmts.readStream.all({ stream: streamId, from: options.fromRevision ?? 0, max: options.maxCount ?? -1 });
    return Promise.resolve(rows.map((r) => this.toRecorded(r)));
  }

  readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    return Promise.resolve(this.readAllSync(options.after, options.maxCount ?? 1000));
  }

  private readAllSync(after: string | null | undefined, max: number): RecordedEvent[] {
    return this.stmts.readAll.all({ after: decodePosition(after), max }).map((r) => this.toRecorded(r));
  }

  headPosition(): Promise<string | null> {
    const p = this.stmts.last.get()?.position;
    return Promise.resolve(!p ? null : encodePosition(p));
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    return subscribeCatchUp(
      {
        read: (after, max) => Promise.resolve(this.readAllSync(after, max)),
        head: () => this.headPosition(),
        wakeups: this.wakeups,
        pollMs: this.options.pollMs ?? 200,
        isClosed: () => this.closed,
      },
      options,
    );
  }

  private nameOf(code: number): string {
    let name = this.names.get(code);
    if (name === undefined) {
      name = this.stmts.name.get(code)?.name;
      if (name === undefined) throw new Error(`the log names no code ${code}`);
      this.names.set(code, name);
    }
    return name;
  }

  private toRecorded(r: LogRow): RecordedEvent {
    if (r.data === null) return recordedDebit(r, (code) => this.nameOf(code));
    return {
      id: r.id!,
      streamId: r.stream_id as string,
      type: r.type,
      data: this.codec.decode(r.type, JSON.parse(r.data)),
      metadata: JSON.parse(r.metadata) as Record<string, unknown>,
      revision: r.revision,
      position: encodePosition(r.position),
      recordedAt: r.recorded_at as string,
    };
  }

  private wake(): void {
    this.wakeups.wakeAll();
  }

  async close(): Promise<void> {
    this.closed = true;
    // Appends already accepted are committed before the writer stops.
    await this.pending.drain();
    await this.closeWriter();
    this.wake();
  }
}


/** The `CreditsDebited` event a `debit_records` row stands for, as it was appended. */
function recordedDebit(r: LogRow, nameOf: (code: number) => string): RecordedEvent {
  return {
    id: debitRecordId(r.position),
    streamId: nameOf(r.stream_id as number),
    type: r.type,
    data: debitData({
      request_id: requestId(r.request!),
      endpoint: nameOf(r.endpoint!),
      channel: nameOf(r.channel!),
      cost: r.cost!,
      from_allowance: r.from_allowance!,
      from_prepaid: r.from_prepaid!,
      from_overage: r.from_overage!,
      at: r.at!,
      period: r.period,
      prev_hash: r.prev_hash!.toString('hex'),
      hash: r.hash!.toString('hex'),
    }),
    metadata: r.key === null ? {} : { key_id: nameOf(r.key) },
    revision: r.revision,
    position: encodePosition(r.position),
    recordedAt: new Date(r.recorded_at).toISOString(),
  };
}
