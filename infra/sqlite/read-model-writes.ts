import type { Database, Statement } from 'better-sqlite3';

/** A collection's table as the writer sees it: the JSON document plus one column per declared field. */
export interface TableSpec {
  collection: string;
  table: string;
  columns: readonly string[];
}

/** A commit with its documents serialized: what crosses to the writer thread. */
export interface SerializedCommit {
  /** The upserted documents, in write order (see `SharedDocs`). */
  docs: { bytes: SharedArrayBuffer; ends: number[] };
  /** The writes in order: an upsert (taking the next document) carries its field columns' values, a delete null. */
  writes: { collection: string; id: string; values: (string | number | null)[] | null }[];
  checkpoints: Record<string, string>;
}

/**
 * A commit's JSON documents as UTF-8 in shared memory: the writer thread reads them where they
 * are. Passed as strings, each would be copied into the writer's heap, and kept alive in the
 * caller's until written (a full rebuild hands over a hundred megabytes of them).
 */
export class SharedDocs {
  private readonly view: Buffer;

  constructor(readonly shared: SerializedCommit['docs']) {
    this.view = Buffer.from(shared.bytes);
  }

  doc(i: number): string {
    return this.view.toString('utf8', i > 0 ? this.shared.ends[i - 1] : 0, this.shared.ends[i]);
  }
}

/**
 * Builds a `SharedDocs` one document at a time: each text is encoded as it comes, into chunks of
 * memory outside the JS heap, so that the texts die at once instead of living (and being copied
 * by the garbage collector) until the whole commit is serialized.
 */
export class SharedDocsBuilder {
  private static readonly CHUNK = 1 << 20;
  private readonly chunks: Buffer[] = [];
  private readonly ends: number[] = [];
  private chunk: Buffer = Buffer.alloc(0);
  /** Bytes written to the current chunk, and to the chunks before it. */
  private used = 0;
  private before = 0;

  add(text: string): void {
    // At most 3 bytes per UTF-16 unit: room for that, else a new chunk.
    const room = text.length * 3;
    if (this.used + room > this.chunk.length) {
      if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used));
      this.before += this.used;
      this.chunk = Buffer.allocUnsafeSlow(Math.max(SharedDocsBuilder.CHUNK, room));
      this.used = 0;
    }
    this.used += this.chunk.write(text, this.used);
    this.ends.push(this.before + this.used);
  }

  finish(): SharedDocs {
    if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used));
    const size = this.before + this.used;
    const docs = new SharedDocs({ bytes: new SharedArrayBuffer(size), ends: this.ends });
    const view = Buffer.from(docs.shared.bytes);
    let at = 0;
    for (const c of this.chunks) at += c.copy(view, at);
    return docs;
  }
}

export const CHECKPOINTS_DDL = `CREATE TABLE IF NOT EXISTS projector_checkpoints (
  projector TEXT PRIMARY KEY, position TEXT NOT NULL) WITHOUT ROWID`;

export interface ReadModelWriter {
  /**
   * Prepares (again, after a reset) the statements of a collection's table. A table of an older
   * shape (other field columns) fails it: its commits fail with that error until a reset
   * re-creates the table and defines it again.
   */
  define(spec: TableSpec): void;
  /** Applies a commit's writes and checkpoints in one transaction. */
  commit(commit: SerializedCommit): void;
}

/** The read models' writes on one connection: the writer thread's, or the store's own for `:memory:`. */
export function readModelWriter(db: Database): ReadModelWriter {
  const tables = new Map<string, { upsert: Statement; del: Statement }>();
  const undefinable = new Map<string, Error>();
  const checkpointGet = db.prepare<[string], { position: string }>('SELECT position FROM projector_checkpoints WHERE projector = ?');
  const checkpointPut = db.prepare(
    `INSERT INTO projector_checkpoints (projector, position) VALUES (?, ?)
     ON CONFLICT (projector) DO UPDATE SET position = max(position, excluded.position)`,
  );
  const apply = db.transaction((commit: SerializedCommit) => {
    // A batch none of whose checkpoints moves forward was applied already (a re-delivery, or
    // a second process running the same projector): apply nothing.
    const entries = Object.entries(commit.checkpoints);
    if (entries.length && entries.every(([p, pos]) => (checkpointGet.get(p)?.position ?? '') >= pos)) return;
    const docs = new SharedDocs(commit.docs);
    let next = 0;
    for (const w of commit.writes) {
      const t = tables.get(w.collection);
      if (!t) throw undefinable.get(w.collection) ?? new Error(`collection ${w.collection} is not registered`);
      if (w.values === null) t.del.run(w.id);
      else t.upsert.run(w.id, docs.doc(next++), ...w.values);
    }
    for (const [projector, position] of entries) checkpointPut.run(projector, position);
  });
  return {
    define({ collection, table, columns }) {
      tables.delete(collection);
      undefinable.delete(collection);
      try {
        tables.set(collection, {
          upsert: db.prepare(
            `INSERT INTO ${table} (id, doc${columns.map((c) => `, ${c}`).join('')})
             VALUES (?, ?${columns.map(() => ', ?').join('')})
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc${columns.map((c) => `, ${c} = excluded.${c}`).join('')}`,
          ),
          del: db.prepare(`DELETE FROM ${table} WHERE id = ?`),
        });
      } catch (err) {
        undefinable.set(collection, err instanceof Error ? err : new Error(String(err)));
      }
    },
    // IMMEDIATE: the write lock is taken (waiting in the busy handler) before the checkpoints are
    // read; a deferred transaction could not upgrade to a writer if the event log's connection
    // committed in between (SQLite fails that at once, without waiting).
    commit: (commit) => apply.immediate(commit),
  };
}
