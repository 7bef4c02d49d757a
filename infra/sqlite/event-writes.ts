import type { Database, Statement } from 'better-sqlite3';
import type { DebitRecord } from '../../src/domain/ledger/debit-record.js';
import type { ExpectedRevision } from '../../src/core/event-store.port.js';

/** One writer's appends, serialized: what crosses to the writer thread. */
export interface SerializedGroup {
  appends: {
    streamId: string;
    expectedRevision: ExpectedRevision;
    /** An event with a `record` is stored as a row of `debit_records` (its id, data and metadata unused). */
    events: { id: string; type: string; data: string; metadata: string; record?: DebitRecord; key?: string | null }[];
  }[];
}

export type GroupOutcome =
  | { ok: true; results: { nextExpectedRevision: number; position: number }[] }
  | { ok: false; error: { kind: 'concurrency'; streamId: string; expected: ExpectedRevision; actual: number | null } | { kind: 'other'; name: string; message: string } };

export const EVENTS_DDL = `
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
  CREATE TABLE IF NOT EXISTS log_names (
    code INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
  );
  CREATE TABLE IF NOT EXISTS debit_records (
    position       INTEGER PRIMARY KEY,
    stream         INTEGER NOT NULL,
    revision       INTEGER NOT NULL,
    request        BLOB NOT NULL,
    endpoint       INTEGER NOT NULL,
    channel        INTEGER NOT NULL,
    cost           INTEGER NOT NULL,
    from_allowance INTEGER NOT NULL,
    from_prepaid   INTEGER NOT NULL,
    from_overage   INTEGER NOT NULL,
    at             INTEGER NOT NULL,
    period         TEXT,
    prev_hash      BLOB NOT NULL,
    hash           BLOB NOT NULL,
    recorded       INTEGER NOT NULL,
    key            INTEGER,
    UNIQUE (stream, revision)
  );`;

/** A log written before debit records kept the call's key (the code of its name) gains the column. */
export function addRecordKeyColumn(db: Database): void {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(debit_records)').all();
  if (!columns.some((c) => c.name === 'key')) db.exec('ALTER TABLE debit_records ADD COLUMN key INTEGER');
}

/** A request id of the service's own form (\`req_\` and 12 bytes in base64url) is stored as its 12 bytes. */
const OWN_REQUEST_ID = /^req_[A-Za-z0-9_-]{16}$/;
export const requestBytes = (id: string): Buffer | string => (OWN_REQUEST_ID.test(id) ? Buffer.from(id.slice(4), 'base64url') : id);
export const requestId = (stored: Buffer | string): string => (typeof stored === 'string' ? stored : `req_${stored.toString('base64url')}`);

class Concurrency extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | null,
  ) {
    super('concurrency');
  }
}

/**
 * Writes several writers' appends in ONE transaction (one fsync): each writer in its own
 * savepoint, checked against its expected revisions, failing alone.
 */
export function groupWriter(db: Database): (groups: SerializedGroup[], recordedAt: string) => GroupOutcome[] {
  const head: Statement<[string, string], { revision: number | null }> = db.prepare(
    `SELECT max(coalesce(e, -1), coalesce(d, -1)) AS revision FROM (
       SELECT (SELECT max(revision) FROM events WHERE stream_id = ?) AS e,
              (SELECT max(revision) FROM debit_records WHERE stream = (SELECT code FROM log_names WHERE name = ?)) AS d)
     WHERE e IS NOT NULL OR d IS NOT NULL`,
  );
  const insert = db.prepare(
    `INSERT INTO events (id, stream_id, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertRecord = recordWriter(db);
  const writeOne = db.transaction((group: SerializedGroup, recordedAt: string) =>
    group.appends.map(({ streamId, expectedRevision, events }) => {
      const current = head.get(streamId, streamId)?.revision ?? null;
      const ok =
        expectedRevision === 'any' ||
        (expectedRevision === 'no_stream' && current === null) ||
        (expectedRevision === 'stream_exists' && current !== null) ||
        (typeof expectedRevision === 'number' && expectedRevision === current);
      if (!ok) throw new Concurrency(streamId, expectedRevision, current);
      let revision = current ?? -1;
      let position = 0;
      for (const e of events) {
        revision += 1;
        position = e.record
          ? insertRecord(streamId, revision, e.record, e.key ?? null, recordedAt)
          : Number(insert.run(e.id, streamId, revision, e.type, e.data, e.metadata, recordedAt).lastInsertRowid);
      }
      return { nextExpectedRevision: revision, position };
    }),
  );
  return (groups, recordedAt) => {
    const outcomes: GroupOutcome[] = [];
    // IMMEDIATE: the write lock is taken (waiting in the busy handler) before anything is read.
    // A deferred transaction would read first, and could then not upgrade to a writer if the
    // read-model connection committed in between: SQLite fails that at once, without waiting.
    db.transaction(() => {
      for (const g of groups) {
        try {
          outcomes.push({ ok: true, results: writeOne(g, recordedAt) });
        } catch (err) {
          outcomes.push({
            ok: false,
            error:
              err instanceof Concurrency
                ? { kind: 'concurrency', streamId: err.streamId, expected: err.expected, actual: err.actual }
                : { kind: 'other', name: (err as Error).name, message: (err as Error).message },
          });
        }
      }
    }).immediate();
    return outcomes;
  };
}

/**
 * Writes a debit record at the log's next position. Records and events share one sequence of
 * positions: `events`' AUTOINCREMENT counter (sqlite_sequence), which a record's position is
 * written back to, so that no event, nor any record, ever gets a position used before.
 */
function recordWriter(db: Database): (streamId: string, revision: number, r: DebitRecord, key: string | null, recordedAt: string) => number {
  const code = db.prepare<[string], { code: number }>('SELECT code FROM log_names WHERE name = ?');
  const addName = db.prepare<[string]>('INSERT INTO log_names (name) VALUES (?)');
  // Looked up each time, not cached: a name added by an append that failed is rolled back with it.
  const codeOf = (name: string): number => code.get(name)?.code ?? Number(addName.run(name).lastInsertRowid);
  const last = db.prepare<[], { seq: number | null }>("SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), coalesce((SELECT max(position) FROM debit_records), 0)) AS seq");
  const bump = db.prepare<[number]>("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'");
  const addSeq = db.prepare<[number]>("INSERT INTO sqlite_sequence (name, seq) SELECT 'events', ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')");
  const insert = db.prepare(
    `INSERT INTO debit_records (position, stream, revision, request, endpoint, channel, cost, from_allowance, from_prepaid, from_overage, at, period, prev_hash, hash, recorded, key)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  return (streamId, revision, r, key, recordedAt) => {
    const position = (last.get()?.seq ?? 0) + 1;
    insert.run(
      position, codeOf(streamId), revision, requestBytes(r.request_id), codeOf(r.endpoint), codeOf(r.channel),
      r.cost, r.from_allowance, r.from_prepaid, r.from_overage, r.at, r.period,
      Buffer.from(r.prev_hash, 'hex'), Buffer.from(r.hash, 'hex'), Date.parse(recordedAt), key === null ? null : codeOf(key),
    );
    bump.run(position);
    addSeq.run(position);
    return position;
  };
}
