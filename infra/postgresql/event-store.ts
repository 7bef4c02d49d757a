import { LogWakeups, subscribeCatchUp } from '../../src/core/catch-up-subscription.js';
import { GroupCommitQueue } from '../../src/core/group-commit.js';
import type pg from 'pg';
import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import { debitData, debitRecordForm, debitRecordId } from '../../src/domain/ledger/debit-record.js';
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
import { uuidV7 } from '../sqlite/uuid-v7.js';
import { checkSchemaName, openPool, preferLz4, UNIQUE_VIOLATION } from './database.js';
import { eventLogDdl, fencedDdl, statements, type EventRow, type PositionMode } from './event-log.sql.js';
import { decodePosition, encodePosition } from './positions.js';
import { recordBytes, recordOfBytes } from '../../src/domain/ledger/debit-record-bytes.js';
import { Notifications } from './notifications.js';

export interface PostgresEventStoreOptions {
  /** The schema of the log's tables (default `scores`); created when missing. */
  schema?: string;
  /**
   * How a new log orders its events (default `serialised`); an existing log keeps the mode it
   * was created with, and opening it with the other one fails. docs/architecture.md compares them.
   */
  positions?: PositionMode;
  /** How often a subscription reads anyway when no notification came (the LISTEN fallback). */
  pollMs?: number;
  /**
   * The least time between a live subscription's reads (default 20 ms; CatchUpSource.minIntervalMs):
   * a fleet's API process and worker each follow the log with several subscriptions, and at one
   * read per commit each they were most of the log's round trips under load.
   */
  readIntervalMs?: number;
  /** How event data is stored (default: as given). */
  codec?: EventCodec;
  /** Connections for appends and reads (LISTEN has one more of its own). */
  poolSize?: number;
  /**
   * `records` (default): a lone metered call's debit is stored as its record's bytes
   * (debit-record-bytes.ts); `events`: with an id and JSON data like any event (the form before
   * records, which a log may hold too: both are read).
   */
  debits?: 'records' | 'events';
}

/** An event as inserted: with its id, data and metadata, or (a debit record) its record's bytes alone. */
type PreparedEvent = { id: string; type: string; data: string; metadata: string; record: null } | { id: null; type: string; data: null; metadata: string | null; record: Buffer };

/** One writer's appends, ready to insert. */
interface PreparedAppend {
  streamId: string;
  expectedRevision: ExpectedRevision;
  events: PreparedEvent[];
}

interface Pending {
  appends: PreparedAppend[];
  resolve(results: AppendResult[]): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; results: AppendResult[] } | { ok: false; error: ConcurrencyError };

/** A writer's expectation against the stream's current last revision (null: no stream). */
function holds(expected: ExpectedRevision, current: number | null): boolean {
  return (
    expected === 'any' ||
    (expected === 'no_stream' && current === null) ||
    (expected === 'stream_exists' && current !== null) ||
    (typeof expected === 'number' && expected === current)
  );
}

/** A stream checked but not written: `appendMany`'s condition (see the port). */
const isCondition = (a: PreparedAppend) => a.events.length === 0 && a.expectedRevision !== 'any';

/** The pool, or one connection inside a transaction. */
type Queryable = Pick<pg.PoolClient, 'query'>;

/** A commit lost a race on a stream's revision to another process. */
class RevisionRace extends Error {}

const RACE_RETRIES = 10;

/**
 * The event log in PostgreSQL (`pg`): one `events` table, appends in transactions.
 *
 * - Appends that arrive while a commit is in flight go together into the next transaction (group
 *   commit), each checked against its own expected revisions and failing alone; `appendMany` is
 *   atomic across its streams (one transaction).
 * - Positions never let a catch-up reader skip an event, even when transactions commit out of
 *   order: a `serialised` log numbers events under a lock held until commit, so numbers become
 *   visible in order; a `fenced` log reads only below the oldest running transaction id.
 * - Subscriptions wake on LISTEN/NOTIFY (appends notify in their transaction, so at commit) and
 *   poll every `pollMs` when notifications are lost.
 */
export class PostgresEventStore implements EventStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly mode: PositionMode;
  private readonly sql: ReturnType<typeof statements>;
  private readonly codec: EventCodec;
  private readonly notifications: Notifications;
  private readonly ready: Promise<void>;
  private readonly pending = new GroupCommitQueue<Pending>((batch) => this.flush(batch));
  private closed = false;
  /** Commits made here and notifications received wake the subscriptions. */
  private readonly wakeups = new LogWakeups();

  constructor(
    url: string,
    private readonly clock: Clock,
    private readonly options: PostgresEventStoreOptions = {},
  ) {
    this.schema = checkSchemaName(options.schema ?? 'scores');
    if (this.schema.length > 50) throw new Error(`schema name too long for its notification channel: ${this.schema}`);
    this.mode = options.positions ?? 'serialised';
    this.sql = statements(this.schema);
    this.codec = options.codec ?? plainEncoding;
    this.pool = openPool(url, { max: options.poolSize ?? 8 });
    this.notifications = new Notifications(url, this.sql.channel, () => this.wake(), options.pollMs ?? 500);
    this.ready = this.migrate();
    this.ready.catch(() => undefined); // reported by the first operation that awaits it
  }

  /** Creates the tables once (concurrent processes wait on an advisory lock) and checks the mode. */
  private async migrate(): Promise<void> {
    const mode = this.mode;
    const results = (await this.pool.query(
      `BEGIN;
       SELECT pg_advisory_xact_lock(hashtext('scores.event-log.${this.schema}'));
       ${eventLogDdl(this.schema)}
       ${mode === 'fenced' ? fencedDdl(this.schema) : ''}
       INSERT INTO ${this.schema}.log (positions) VALUES ('${mode}') ON CONFLICT DO NOTHING;
       SELECT positions FROM ${this.schema}.log;
       COMMIT;`,
    )) as unknown as pg.QueryResult<{ positions: PositionMode }>[];
    await preferLz4(this.pool, `${this.schema}.events`, 'data');
    const found = results.at(-2)?.rows[0]?.positions;
    if (found !== mode) {
      throw new Error(`the event log in schema ${this.schema} orders positions "${found}"; it cannot be opened as "${mode}"`);
    }
  }

  append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision = 'any'): Promise<AppendResult> {
    return this.appendMany([{ streamId, events, expectedRevision }]).then((r) => r[0]!);
  }

  appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    let prepared: PreparedAppend[];
    try {
      prepared = appends.map((a) => ({
        streamId: a.streamId,
        expectedRevision: a.expectedRevision ?? 'any',
        events: a.events.map((e): PreparedEvent => {
          const form = debitRecordForm(e, this.options.debits);
          const record = form && recordBytes(form.record);
          // A record's call key, the only metadata a record may have, stays in the metadata column.
          return record
            ? { id: null, type: e.type, data: null, metadata: form.key === null ? null : JSON.stringify(e.metadata), record }
            : { id: e.id ?? uuidV7(), type: e.type, data: JSON.stringify(this.codec.encode(e.type, e.data)), metadata: JSON.stringify(e.metadata ?? {}), record: null };
        }),
      }));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ appends: prepared, resolve, reject });
    });
  }

  /**
   * Commits every queued writer in one transaction. If it fails for another reason than a
   * revision (a duplicate event id, say), each writer is committed alone so that only the one at
   * fault fails.
   */
  private async flush(batch: Pending[]): Promise<void> {
    const settle = (p: Pending, o: Outcome) => (o.ok ? p.resolve(o.results) : p.reject(o.error));
    try {
      await this.ready;
      const outcomes = await this.commitRetrying(batch.map((p) => p.appends));
      batch.forEach((p, i) => settle(p, outcomes[i]!));
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else
        for (const p of batch) {
          try {
            settle(p, (await this.commitRetrying([p.appends]))[0]!);
          } catch (err) {
            p.reject(err);
          }
        }
    } finally {
      this.wake();
    }
  }

  /** Writers in other processes may append to the same streams: the loser decides again. */
  private async commitRetrying(groups: PreparedAppend[][]): Promise<Outcome[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        // The first attempt trusts the writers' expected revisions; a lost race reads the heads.
        return await this.commit(groups, this.clock.now().toISOString(), attempt === 1);
      } catch (err) {
        if (!(err instanceof RevisionRace) || attempt >= RACE_RETRIES) throw err;
      }
    }
  }

  /**
   * A batch with a condition (a stream checked, not written) reads the streams' revisions under
   * the append lock, in a transaction that holds it until commit: no append can come between the
   * check and the commit (the fencing of docs/scaling.md). Other batches take the lock only to
   * insert, and a lost race is caught by the unique index instead.
   */
  private async commit(groups: PreparedAppend[][], recordedAt: string, trusting: boolean): Promise<Outcome[]> {
    if (!groups.some((g) => g.some(isCondition))) {
      const trusted = trusting ? await this.commitTrusting(groups, recordedAt) : null;
      return trusted ?? this.commitOn(this.pool, groups, recordedAt);
    }
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(this.sql.lockAppends);
      const outcomes = await this.commitOn(client, groups, recordedAt);
      await client.query('COMMIT');
      return outcomes;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Where every writer names the revision it expects (a number, or no stream), the batch is
   * decided on those as the streams' heads and written in one statement, without reading the
   * heads first: the statement requires each expected event to be there (else writes nothing:
   * null, and the batch is decided on the heads read), and the unique (stream, revision) index
   * refuses a revision already taken (a race: decided again). A ledger's debits, the bulk of the
   * appends, name theirs from the account's cached state. Null as well for a batch it cannot take.
   */
  private async commitTrusting(groups: PreparedAppend[][], recordedAt: string): Promise<Outcome[] | null> {
    const heads = new Map<string, number | null>();
    for (const a of groups.flat()) {
      const expected = a.expectedRevision === 'no_stream' ? null : a.expectedRevision;
      if (typeof expected === 'string' || heads.has(a.streamId)) return null;
      heads.set(a.streamId, expected);
    }
    const plan = planInserts(groups, new Map(heads));
    if (plan.rows.length === 0) return null;
    const present = [...heads].filter((h): h is [string, number] => h[1] !== null);
    const positions = await this.insert(this.pool, plan.rows, recordedAt, present);
    if (positions.size !== plan.rows.length) return null;
    return this.outcomes(plan, positions);
  }

  /**
   * Reads each stream's last revision, decides every writer in order against them, and writes
   * the accepted events with one statement. Outside a transaction the revisions are read apart
   * from the write: if another process appends to one of the streams in between, the unique
   * (stream, revision) index refuses the statement and the batch is decided again.
   */
  private async commitOn(db: Queryable, groups: PreparedAppend[][], recordedAt: string): Promise<Outcome[]> {
    const streamIds = [...new Set(groups.flatMap((g) => g.map((a) => a.streamId)))];
    const found = await db.query<{ stream_id: string; revision: number | null }>({
      name: `${this.schema}.streamHeads`,
      text: this.sql.streamHeads,
      values: [streamIds],
    });
    const plan = planInserts(groups, new Map(found.rows.map((r) => [r.stream_id, r.revision])));
    const positions = plan.rows.length > 0 ? await this.insert(db, plan.rows, recordedAt) : new Map<string, string>();
    return this.outcomes(plan, positions);
  }

  private outcomes(plan: ReturnType<typeof planInserts>, positions: Map<string, string>): Outcome[] {
    return plan.outcomes.map((o) =>
      o.ok
        ? {
            ok: true,
            results: o.lastRows.map((row, i) => ({
              nextExpectedRevision: o.revisions[i]!,
              position: row === null ? '' : positions.get(`${plan.rows[row]!.revision}:${plan.rows[row]!.streamId}`)!,
            })),
          }
        : o,
    );
  }

  /**
   * Inserts the rows in one statement; answers each row's position by `revision:stream`. With
   * `present` (stream, revision pairs), only if each of those events is there: else none.
   */
  private async insert(db: Queryable, rows: PlannedRow[], recordedAt: string, present: [string, number][] = []): Promise<Map<string, string>> {
    const col = <K extends keyof PlannedRow>(k: K) => rows.map((r) => r[k]);
    let written;
    try {
      written = await db.query<{ stream_id: string; revision: number; position: string; tx: string }>({
        name: `${this.schema}.append`,
        text: this.sql.append(this.mode),
        values: [col('streamId'), col('revision'), col('id'), col('type'), col('data'), col('metadata'), recordedAt, col('record'), present.map((p) => p[0]), present.map((p) => p[1])],
      });
    } catch (err) {
      const e = err as { code?: string; constraint?: string };
      if (e.code === UNIQUE_VIOLATION && e.constraint === 'events_stream_revision') throw new RevisionRace('another writer appended to the same stream');
      throw err;
    }
    return new Map(written.rows.map((r) => [`${r.revision}:${r.stream_id}`, encodePosition(this.mode, r)]));
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    await this.ready;
    const res = await this.pool.query<EventRow>({
      name: `${this.schema}.readStream`,
      text: this.sql.readStream,
      values: [streamId, options.fromRevision ?? 0, options.maxCount ?? null],
    });
    return res.rows.map((r) => this.toRecorded(r));
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    await this.ready;
    return this.readAfter(options.after ?? null, options.maxCount ?? 1000);
  }

  /** Events after `after`; with `dataTypes`, the data of those types only (the others' is null). */
  private async readAfter(after: string | null, max: number, dataTypes?: readonly string[]): Promise<RecordedEvent[]> {
    const from = decodePosition(this.mode, after);
    const serialised = this.mode === 'serialised';
    const values: unknown[] = serialised ? [from.position, max] : [from.tx, from.position, max];
    const query = !dataTypes
      ? serialised
        ? { name: `${this.schema}.readAll`, text: this.sql.readAllSerialised }
        : { name: `${this.schema}.readAllFenced`, text: this.sql.readAllFenced }
      : serialised
        ? { name: `${this.schema}.readAllFor`, text: this.sql.readAllSerialisedFor }
        : { name: `${this.schema}.readAllFencedFor`, text: this.sql.readAllFencedFor };
    if (dataTypes) values.push(dataTypes);
    const res = await this.pool.query<EventRow>({ ...query, values });
    return res.rows.map((r) => this.toRecorded(r));
  }

  async headPosition(): Promise<string | null> {
    await this.ready;
    if (this.mode === 'serialised') {
      const head = (await this.pool.query<{ position: string | null }>(this.sql.headSerialised)).rows[0]?.position ?? null;
      return head === null ? null : encodePosition(this.mode, { position: head, tx: '' });
    }
    const [row] = (await this.pool.query<{ tx: string; position: string }>(this.sql.headFenced)).rows;
    return row ? encodePosition(this.mode, row) : null;
  }

  /** Whether notifications reach this store now (false: subscriptions are polling). */
  get listening(): boolean {
    return this.notifications.listening;
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    return subscribeCatchUp(
      {
        read: (after, max) => this.readAfter(after, max, options.dataTypes),
        head: () => this.headPosition(),
        wakeups: this.wakeups,
        pollMs: this.options.pollMs ?? 500,
        isClosed: () => this.closed,
        // Listening again before each wait: a connection lost since is noticed here.
        prepare: async () => {
          await this.ready;
          this.notifications.ensure();
        },
        readAhead: true,
        minIntervalMs: this.options.readIntervalMs ?? 20,
      },
      options,
    );
  }

  private toRecorded(r: EventRow): RecordedEvent {
    const position = encodePosition(this.mode, r);
    return {
      id: r.id ?? debitRecordId(Number(r.position)),
      streamId: r.stream_id,
      type: r.type,
      data: r.record ? debitData(recordOfBytes(r.record)) : r.data === null ? null : this.codec.decode(r.type, r.data),
      metadata: r.metadata ?? {},
      revision: r.revision,
      position,
      recordedAt: r.recorded_at,
    };
  }

  private wake(): void {
    this.wakeups.wakeAll();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Appends already accepted are committed before the connections close.
    await this.pending.drain();
    await this.notifications.close();
    this.wake();
    await this.ready.catch(() => undefined);
    await this.pool.end();
  }
}

/** An event to insert, in commit order. */
type PlannedRow = { streamId: string; revision: number } & PreparedEvent;

type PlannedOutcome =
  | { ok: true; revisions: number[]; /** Per append, the index of its last row (null: no events). */ lastRows: (number | null)[] }
  | { ok: false; error: ConcurrencyError };

/**
 * Decides every writer in order against the streams' last revisions: a writer whose expectation
 * fails on any of its streams writes nothing and leaves the revisions as they were for the next.
 */
function planInserts(groups: PreparedAppend[][], heads: Map<string, number | null>): { rows: PlannedRow[]; outcomes: PlannedOutcome[] } {
  const rows: PlannedRow[] = [];
  const outcomes = groups.map((appends): PlannedOutcome => {
    const local = new Map<string, number | null>();
    const current = (s: string) => (local.has(s) ? local.get(s)! : (heads.get(s) ?? null));
    const mine: PlannedRow[] = [];
    const revisions: number[] = [];
    const lastRows: (number | null)[] = [];
    for (const a of appends) {
      const at = current(a.streamId);
      if (!holds(a.expectedRevision, at)) return { ok: false, error: new ConcurrencyError(a.streamId, a.expectedRevision, at) };
      let revision = at ?? -1;
      for (const e of a.events) mine.push({ streamId: a.streamId, revision: ++revision, ...e });
      local.set(a.streamId, a.events.length ? revision : at);
      revisions.push(revision);
      lastRows.push(a.events.length ? rows.length + mine.length - 1 : null);
    }
    rows.push(...mine);
    for (const [s, r] of local) heads.set(s, r);
    return { ok: true, revisions, lastRows };
  });
  return { rows, outcomes };
}
