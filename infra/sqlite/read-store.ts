import type { Worker } from 'node:worker_threads';
import type {
  CollectionDef,
  CommitBatch,
  FieldCondition,
  Filter,
  FindOptions,
  Page,
  ReadSnapshot,
  ReadStore,
  Scalar,
} from '../../src/core/read-store.port.js';
import { badRequest } from '../../src/core/errors.js';
import { BUSY_TIMEOUT_MS, type SqliteDb } from './database.js';
import { CHECKPOINTS_DDL, readModelWriter, SharedDocs, SharedDocsBuilder, type ReadModelWriter, type SerializedCommit, type TableSpec } from './read-model-writes.js';
import { startWorker } from './worker.js';
import Database, { type Statement } from 'better-sqlite3';

type AnyDef = CollectionDef<any>;

interface Prepared {
  def: AnyDef;
  table: string;
  get: Statement<[string], { doc: string }>;
  many: Statement<[string], { id: string; doc: string }>;
}

const IDENT = /^[a-z][a-z0-9_]*$/i;
const col = (field: string) => `f_${field}`;
const tableName = (collection: string) => `rm_${collection}`;

function toSql(v: Scalar | undefined): string | number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/** A commit handed to the writer thread: settles its outcome once (written, or its first failed attempt). */
interface Sent {
  written(): void;
  failed(err: Error): void;
}

/**
 * The commits handed to the writer thread and not written yet. The thread writes them in order,
 * each in one transaction, and retries one that fails (its lock held too long by another
 * process, a full disk) until it is written: the caller has moved on from it, its checkpoints are
 * the caller's now, so it is never dropped while the process lives. Meanwhile `failing` holds the
 * error and no new commit is taken. Until written, their documents are read from here.
 */
class WriteBehind {
  /** The error of the commit the writer retries (or, for good, the writer thread's own). */
  failing: Error | null = null;
  private retrying = 0;
  private sent = 0;
  /** The last commit's outcome: settles once it is written, or at its first failed attempt. */
  private last: Promise<void> = Promise.resolve();
  private readonly outcomes = new Map<number, Sent>();
  private readonly unwritten = new Map<number, { docs: SharedDocs; writes: SerializedCommit['writes'] }>();
  /** collection → id → [commit number, document number in it, or -1 (deleted)]. */
  private readonly byId = new Map<string, Map<string, [commit: number, doc: number]>>();

  constructor(private readonly worker: Worker) {
    worker.on('message', (msg: { id: number; failure?: { name: string; message: string } }) => {
      if (msg.failure) {
        const err = Object.assign(new Error(msg.failure.message), { name: msg.failure.name });
        this.failing = err;
        this.retrying = msg.id;
        this.outcomes.get(msg.id)?.failed(err);
        this.outcomes.delete(msg.id);
        return;
      }
      this.outcomes.get(msg.id)?.written();
      this.outcomes.delete(msg.id);
      this.forget(msg.id);
      if (this.retrying === msg.id) this.failing = null;
    });
    worker.on('error', (err) => {
      this.failing = Object.assign(new Error(`the read-model writer thread stopped: ${String(err)}`), { cause: err });
      for (const o of this.outcomes.values()) o.failed(this.failing);
      this.outcomes.clear();
    });
  }

  define(spec: TableSpec): void {
    this.worker.postMessage({ define: spec });
  }

  /** Hands a commit over; resolves once the one before it is written (rejects if it failed an attempt). */
  send(commit: SerializedCommit, docs: SharedDocs): Promise<void> {
    const n = ++this.sent;
    this.unwritten.set(n, { docs, writes: commit.writes });
    let j = 0;
    for (const w of commit.writes) {
      let ids = this.byId.get(w.collection);
      if (!ids) this.byId.set(w.collection, (ids = new Map<string, [commit: number, doc: number]>()));
      ids.set(w.id, [n, w.values === null ? -1 : j++]);
    }
    const previous = this.last;
    this.last = new Promise<void>((resolve, reject) => this.outcomes.set(n, { written: resolve, failed: reject }));
    // Reported to whoever commits next; never an unhandled rejection.
    this.last.catch(() => undefined);
    this.worker.postMessage({ id: n, commit });
    return previous;
  }

  /** A document of a commit not written yet: null when deleted, undefined when in none. */
  doc<T>(collection: string, id: string): T | null | undefined {
    const at = this.byId.get(collection)?.get(id);
    if (!at) return undefined;
    return at[1] < 0 ? null : (JSON.parse(this.unwritten.get(at[0])!.docs.doc(at[1])) as T);
  }

  holds(collection: string): boolean {
    return (this.byId.get(collection)?.size ?? 0) > 0;
  }

  /** Resolves once every commit handed over is written, or at once while the writer is failing. */
  async settled(): Promise<void> {
    let last: Promise<void> | null = null;
    while (!this.failing && this.last !== last) {
      last = this.last;
      await last.catch(() => undefined);
    }
  }

  /** Drops the documents of a written commit (those no later commit wrote again). */
  private forget(n: number): void {
    for (const w of this.unwritten.get(n)?.writes ?? []) {
      const ids = this.byId.get(w.collection);
      if (ids?.get(w.id)?.[0] === n) ids.delete(w.id);
    }
    this.unwritten.delete(n);
  }

  async close(): Promise<void> {
    await this.settled();
    await this.worker.terminate();
  }
}

/**
 * Read models in the embedded SQLite file. A collection is a table `rm_<name>` holding the JSON
 * document plus one real column per declared field, with the declared compound indexes.
 *
 * Commits are written behind, by a writer thread (inline for `:memory:`): `commit` serializes the
 * documents, hands them over and resolves once the commit before it is written. SQLite's share of
 * a commit (a third of a full rebuild) so runs beside the caller's work on its next batch, and
 * waiting for the write lock (the log's writer thread commits to the same file) never blocks the
 * event loop. Every read sees every resolved commit: `get` / `getMany` read the documents not
 * written yet from memory, the other reads wait for them (see `WriteBehind` for failures).
 */
/** A table's documents in id order, `batchSize` rows a statement, yielding to the event loop between batches. */
async function* scanTable<T>(db: SqliteDb, table: string, batchSize: number): AsyncIterable<T> {
  const stmt = db.prepare<[string, number], { id: string; doc: string }>(`SELECT id, doc FROM ${table} WHERE id > ? ORDER BY id LIMIT ?`);
  let after = '';
  for (;;) {
    const rows = stmt.all(after, batchSize);
    if (rows.length === 0) return;
    for (const r of rows) yield JSON.parse(r.doc) as T;
    after = rows[rows.length - 1]!.id;
    await Promise.resolve();
  }
}

export class SqliteReadStore implements ReadStore {
  private readonly collections = new Map<string, Prepared>();
  /** Statements of `find` / `count` by SQL text: a query shape is compiled once. */
  private readonly statements = new Map<string, Statement>();
  private readonly checkpointGet;
  private readonly inline: ReadModelWriter | null;
  private readonly behind: WriteBehind | null;
  /** The newest checkpoint of each projector in a commit handed to the writer thread. */
  private readonly handedOver = new Map<string, string>();

  constructor(private readonly db: SqliteDb) {
    db.exec(CHECKPOINTS_DDL);
    this.checkpointGet = db.prepare<[string], { position: string }>('SELECT position FROM projector_checkpoints WHERE projector = ?');
    if (db.memory) {
      this.inline = readModelWriter(db);
      this.behind = null;
    } else {
      this.inline = null;
      const synchronous = db.pragma('synchronous', { simple: true }) === 2 ? 'FULL' : 'NORMAL';
      this.behind = new WriteBehind(startWorker('read-model-writer', { file: db.name, synchronous }));
    }
  }

  register(defs: readonly AnyDef[]): Promise<void> {
    for (const def of defs) this.prepare(def);
    return Promise.resolve();
  }

  private prepare(def: AnyDef): Prepared {
    const existing = this.collections.get(def.name);
    if (existing) return existing;
    if (!IDENT.test(def.name)) throw new Error(`bad collection name ${def.name}`);
    for (const f of def.fields) if (!IDENT.test(f)) throw new Error(`bad field name ${f}`);
    const table = tableName(def.name);
    this.createTable(def, table);
    const spec: TableSpec = { collection: def.name, table, columns: def.fields.map(col) };
    if (this.inline) this.inline.define(spec);
    else this.behind!.define(spec);
    const prepared: Prepared = {
      def,
      table,
      get: this.db.prepare(`SELECT doc FROM ${table} WHERE id = ?`),
      many: this.db.prepare(`SELECT id, doc FROM ${table} WHERE id IN (SELECT value FROM json_each(?))`),
    };
    this.collections.set(def.name, prepared);
    return prepared;
  }

  private createTable(def: AnyDef, table: string): void {
    const fieldCols = def.fields.map((f) => `, ${col(f)}`).join('');
    // A rowid table: documents are appended in write order (cheap during a rebuild), and the
    // unique index on `id` stays small because it holds only the ids.
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL${fieldCols})`);
    def.indexes.forEach((fields, i) => {
      this.db.exec(
        `CREATE INDEX IF NOT EXISTS ${table}_ix${i} ON ${table} (${fields.map(col).join(', ')})`,
      );
    });
  }

  private table(def: AnyDef): Prepared {
    return this.collections.get(def.name) ?? this.prepare(def);
  }

  get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
    const unwritten = this.behind?.doc<T>(def.name, id);
    if (unwritten !== undefined) return Promise.resolve(unwritten);
    const row = this.table(def).get.get(id);
    return Promise.resolve(row ? (JSON.parse(row.doc) as T) : null);
  }

  getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    let stored = ids;
    if (this.behind?.holds(def.name)) {
      const missing: string[] = [];
      for (const id of ids) {
        const doc = this.behind.doc<T>(def.name, id);
        if (doc === undefined) missing.push(id);
        else if (doc !== null) out.set(id, doc);
      }
      stored = missing;
    }
    if (stored.length === 0) return Promise.resolve(out);
    for (const r of this.table(def).many.all(JSON.stringify(stored))) out.set(r.id, JSON.parse(r.doc) as T);
    return Promise.resolve(out);
  }

  async find<T>(def: CollectionDef<T>, filter: Filter<T>, options: FindOptions<T> = {}): Promise<Page<T>> {
    await this.behind?.settled();
    const { table } = this.table(def);
    const where = whereClause(def, filter);
    const sort: [string, 1 | -1][] = (options.sort ?? []).map(([f, d]) => {
      assertField(def, f);
      return [col(f), d];
    });
    sort.push(['id', 1]);
    if (options.cursor) {
      const values = decodeCursor(options.cursor, sort.length);
      const ors: string[] = [];
      for (let k = 0; k < sort.length; k++) {
        const parts: string[] = [];
        for (let j = 0; j < k; j++) {
          parts.push(`${sort[j]![0]} IS ?`);
          where.params.push(values[j] ?? null);
        }
        // SQLite sorts null first: after a null (ascending) come all non-nulls; after a value
        // (descending) come smaller values, then the nulls.
        const [c, dir] = sort[k]!;
        const v = values[k] ?? null;
        if (dir === 1) {
          if (v === null) parts.push(`${c} IS NOT NULL`);
          else {
            parts.push(`${c} > ?`);
            where.params.push(v);
          }
        } else if (v === null) {
          continue;
        } else {
          parts.push(`(${c} < ? OR ${c} IS NULL)`);
          where.params.push(v);
        }
        ors.push(`(${parts.join(' AND ')})`);
      }
      where.parts.push(ors.length ? `(${ors.join(' OR ')})` : '0');
    }
    const limit = options.limit ?? -1;
    const sql =
      `SELECT id, doc${sort.slice(0, -1).map(([c]) => `, ${c}`).join('')} FROM ${table}` +
      (where.parts.length ? ` WHERE ${where.parts.join(' AND ')}` : '') +
      ` ORDER BY ${sort.map(([c, d]) => `${c} ${d === 1 ? 'ASC' : 'DESC'}`).join(', ')}` +
      ` LIMIT ${limit < 0 ? -1 : limit + 1}`;
    const rows = this.statement(sql).all(...where.params) as Record<string, string | number | null>[];
    let nextCursor: string | null = null;
    if (limit === 0) return { items: [], nextCursor: null };
    if (limit >= 0 && rows.length > limit) {
      rows.length = limit;
      const last = rows[rows.length - 1]!;
      nextCursor = encodeCursor(sort.map(([c]) => last[c] ?? null));
    }
    return { items: rows.map((r) => JSON.parse(r['doc'] as string) as T), nextCursor };
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      if (this.statements.size > 500) this.statements.clear();
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  async count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    await this.behind?.settled();
    const { table } = this.table(def);
    const where = whereClause(def, filter);
    const row = this.statement(`SELECT count(*) AS n FROM ${table}${where.parts.length ? ` WHERE ${where.parts.join(' AND ')}` : ''}`).get(
      ...where.params,
    ) as { n: number };
    return row.n;
  }

  async *scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
    await this.behind?.settled();
    yield* scanTable<T>(this.db, this.table(def).table, batchSize);
  }

  /**
   * A read transaction on a connection of its own: WAL gives it the file as of its first read
   * for as long as it stays open, while the writers go on (this connection's reads keep seeing
   * every new commit). In memory there is no second connection: the view is the live store.
   */
  async snapshot(): Promise<ReadSnapshot> {
    await this.behind?.settled();
    if (this.db.memory) {
      return { scan: (def, n) => this.scan(def, n), checkpoint: (p) => this.checkpoint(p), consistent: false, close: () => Promise.resolve() };
    }
    const conn = new Database(this.db.name, { readonly: true, fileMustExist: true });
    conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    conn.exec('BEGIN');
    // The transaction's snapshot is taken at its first read.
    const checkpointGet = conn.prepare<[string], { position: string }>('SELECT position FROM projector_checkpoints WHERE projector = ?');
    checkpointGet.get('');
    const exists = conn.prepare<[string], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?");
    return {
      consistent: true,
      async *scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
        const table = tableName(def.name);
        // A collection with no table yet (nothing registered it when the snapshot was taken) is empty.
        if (!conn.open || exists.get(table)!.n === 0) return;
        yield* scanTable<T>(conn, table, batchSize);
      },
      checkpoint: (projector) => Promise.resolve(checkpointGet.get(projector)?.position ?? null),
      close() {
        if (conn.open) conn.close();
        return Promise.resolve();
      },
    };
  }

  commit(batch: CommitBatch): Promise<void> {
    // The writer retries a commit that failed: take nothing new meanwhile (the caller tries again).
    if (this.behind?.failing) return Promise.reject(this.behind.failing);
    let commit: SerializedCommit;
    let docs: SharedDocs;
    try {
      ({ commit, docs } = this.serialize(batch));
      if (this.inline) {
        this.inline.commit(commit);
        return Promise.resolve();
      }
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    // A batch none of whose checkpoints moves forward was applied already (a re-delivery): the
    // writer applies nothing of it, so its documents must not be read meanwhile either.
    const entries = Object.entries(batch.checkpoints);
    if (entries.length && entries.every(([p, pos]) => this.checkpointKnown(p) >= pos)) return this.behind!.settled();
    for (const [p, pos] of entries) if (pos > (this.handedOver.get(p) ?? '')) this.handedOver.set(p, pos);
    return this.behind!.send(commit, docs);
  }

  /** The newest checkpoint of a projector, stored or in a commit handed to the writer. */
  private checkpointKnown(projector: string): string {
    const stored = this.checkpointGet.get(projector)?.position ?? '';
    const handed = this.handedOver.get(projector) ?? '';
    return stored > handed ? stored : handed;
  }

  /** A batch's documents and field values, serialized for the writer. */
  private serialize(batch: CommitBatch): { commit: SerializedCommit; docs: SharedDocs } {
    const texts = new SharedDocsBuilder();
    const writes = batch.writes.map((w) => {
      const p = this.collections.get(w.collection);
      if (!p) throw new Error(`collection ${w.collection} is not registered`);
      if (w.op === 'delete') return { collection: w.collection, id: w.id, values: null };
      const doc = w.doc as Record<string, unknown>;
      texts.add(JSON.stringify(doc));
      return { collection: w.collection, id: w.id, values: p.def.fields.map((f) => toSql(doc[f] as Scalar)) };
    });
    const docs = texts.finish();
    return { commit: { docs: docs.shared, writes, checkpoints: batch.checkpoints }, docs };
  }

  async checkpoint(projector: string): Promise<string | null> {
    await this.behind?.settled();
    return this.checkpointGet.get(projector)?.position ?? null;
  }

  async reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    await this.behind?.settled();
    // Its tables must not change under a commit the writer still retries.
    if (this.behind?.failing) throw this.behind.failing;
    const run = this.db.transaction(() => {
      for (const name of collections) {
        const p = this.collections.get(name);
        if (!p) throw new Error(`collection ${name} is not registered`);
        this.db.exec(`DROP TABLE IF EXISTS ${p.table}`);
        this.createTable(p.def, p.table);
      }
      for (const projector of projectors) this.db.prepare('DELETE FROM projector_checkpoints WHERE projector = ?').run(projector);
    });
    run();
    for (const projector of projectors) this.handedOver.delete(projector);
    // Statements prepared against dropped tables are invalid: prepare them again.
    this.statements.clear();
    for (const name of collections) {
      const def = this.collections.get(name)!.def;
      this.collections.delete(name);
      this.prepare(def);
    }
  }

  async close(): Promise<void> {
    await this.behind?.close();
  }
}

function assertField(def: AnyDef, field: string): void {
  if (!def.fields.includes(field)) {
    throw new Error(`collection ${def.name}: field ${field} is not declared queryable`);
  }
}

function whereClause(def: AnyDef, filter: Record<string, FieldCondition | undefined>): { parts: string[]; params: (string | number | null)[] } {
  const parts: string[] = [];
  const params: (string | number | null)[] = [];
  for (const [field, cond] of Object.entries(filter)) {
    if (cond === undefined) continue;
    assertField(def, field);
    const c = col(field);
    if (cond === null || typeof cond !== 'object') {
      if (cond === null) parts.push(`${c} IS NULL`);
      else {
        parts.push(`${c} = ?`);
        params.push(toSql(cond));
      }
      continue;
    }
    // `IS` / `IS NOT` compare null as a value (as MongoDB does); ordering operators never match null.
    const ops: [Exclude<keyof typeof cond, '$in'>, string][] = [
      ['$eq', 'IS'],
      ['$ne', 'IS NOT'],
      ['$gt', '>'],
      ['$gte', '>='],
      ['$lt', '<'],
      ['$lte', '<='],
    ];
    for (const [op, sql] of ops) {
      const v = cond[op];
      if (v === undefined) continue;
      parts.push(`${c} ${sql} ?`);
      params.push(toSql(v));
    }
    if (cond.$in) {
      const values = cond.$in.filter((v) => v !== null);
      const withNull = values.length !== cond.$in.length;
      const alts: string[] = [];
      if (values.length) {
        alts.push(`${c} IN (${values.map(() => '?').join(',')})`);
        params.push(...values.map(toSql));
      }
      if (withNull) alts.push(`${c} IS NULL`);
      parts.push(alts.length ? `(${alts.join(' OR ')})` : '0');
    }
  }
  return { parts, params };
}

function encodeCursor(values: (string | number | null)[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

function decodeCursor(cursor: string, n: number): (string | number | null)[] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    // Only values a cursor can hold reach SQLite: a forged [true, "x"] is refused, not a 500.
    const scalar = (x: unknown) => x === null || typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x));
    if (Array.isArray(v) && v.length === n && v.every(scalar)) return v as (string | number | null)[];
  } catch {
    /* malformed: refused below */
  }
  throw badRequest('cursor is not valid for this query');
}
