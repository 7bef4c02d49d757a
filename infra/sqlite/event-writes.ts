import type { Database, Statement } from 'better-sqlite3';
import type { ExpectedRevision } from '../../src/core/event-store.port.js';

/** One writer's appends, serialized: what crosses to the writer thread. */
export interface SerializedGroup {
  appends: {
    streamId: string;
    expectedRevision: ExpectedRevision;
    events: { id: string; type: string; data: string; metadata: string }[];
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
  );`;

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
  const head: Statement<[string], { revision: number | null }> = db.prepare('SELECT max(revision) AS revision FROM events WHERE stream_id = ?');
  const insert = db.prepare(
    `INSERT INTO events (id, stream_id, revision, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const writeOne = db.transaction((group: SerializedGroup, recordedAt: string) =>
    group.appends.map(({ streamId, expectedRevision, events }) => {
      const current = head.get(streamId)?.revision ?? null;
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
        position = Number(insert.run(e.id, streamId, revision, e.type, e.data, e.metadata, recordedAt).lastInsertRowid);
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
