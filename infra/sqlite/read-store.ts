import type {
  CollectionDef,
  CommitBatch,
  FieldCondition,
  Filter,
  FindOptions,
  Page,
  ReadStore,
  Scalar,
} from '../../src/core/read-store.port.js';
import { badRequest } from '../../src/core/errors.js';
import { BUSY_TIMEOUT_MS, isBusy, type SqliteDb } from './database.js';
import type { Statement } from 'better-sqlite3';

type AnyDef = CollectionDef<any>;

interface Prepared {
  def: AnyDef;
  table: string;
  upsert: Statement;
  del: Statement;
  get: Statement<[string], { doc: string }>;
  many: Statement<[string], { id: string; doc: string }>;
}

const IDENT = /^[a-z][a-z0-9_]*$/i;
/** How long a read-model commit keeps retrying a write lock held by another connection. */
const LOCK_WAIT_MS = 60_000;
const col = (field: string) => `f_${field}`;

function toSql(v: Scalar | undefined): string | number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/**
 * Read models in the embedded SQLite file. A collection is a table `rm_<name>` holding the JSON
 * document plus one real column per declared field, with the declared compound indexes.
 */
export class SqliteReadStore implements ReadStore {
  private readonly collections = new Map<string, Prepared>();
  /** Statements of `find` / `count` by SQL text: a query shape is compiled once. */
  private readonly statements = new Map<string, Statement>();
  private readonly checkpointGet;
  private readonly checkpointPut;

  constructor(private readonly db: SqliteDb) {
    db.exec(`CREATE TABLE IF NOT EXISTS projector_checkpoints (
      projector TEXT PRIMARY KEY, position TEXT NOT NULL) WITHOUT ROWID`);
    this.checkpointGet = db.prepare<[string], { position: string }>(
      'SELECT position FROM projector_checkpoints WHERE projector = ?',
    );
    this.checkpointPut = db.prepare(
      `INSERT INTO projector_checkpoints (projector, position) VALUES (?, ?)
       ON CONFLICT (projector) DO UPDATE SET position = max(position, excluded.position)`,
    );
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
    const table = `rm_${def.name}`;
    this.createTable(def, table);
    const fieldCols = def.fields.map(col);
    const upsert = this.db.prepare(
      `INSERT INTO ${table} (id, doc${fieldCols.map((c) => `, ${c}`).join('')})
       VALUES (?, ?${fieldCols.map(() => ', ?').join('')})
       ON CONFLICT (id) DO UPDATE SET doc = excluded.doc${fieldCols.map((c) => `, ${c} = excluded.${c}`).join('')}`,
    );
    const prepared: Prepared = {
      def,
      table,
      upsert,
      del: this.db.prepare(`DELETE FROM ${table} WHERE id = ?`),
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
    const row = this.table(def).get.get(id);
    return Promise.resolve(row ? (JSON.parse(row.doc) as T) : null);
  }

  getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    if (ids.length === 0) return Promise.resolve(out);
    for (const r of this.table(def).many.all(JSON.stringify(ids))) out.set(r.id, JSON.parse(r.doc) as T);
    return Promise.resolve(out);
  }

  find<T>(def: CollectionDef<T>, filter: Filter<T>, options: FindOptions<T> = {}): Promise<Page<T>> {
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
    if (limit === 0) return Promise.resolve({ items: [], nextCursor: null });
    if (limit >= 0 && rows.length > limit) {
      rows.length = limit;
      const last = rows[rows.length - 1]!;
      nextCursor = encodeCursor(sort.map(([c]) => last[c] ?? null));
    }
    return Promise.resolve({ items: rows.map((r) => JSON.parse(r['doc'] as string) as T), nextCursor });
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

  count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    const { table } = this.table(def);
    const where = whereClause(def, filter);
    const row = this.statement(`SELECT count(*) AS n FROM ${table}${where.parts.length ? ` WHERE ${where.parts.join(' AND ')}` : ''}`).get(
      ...where.params,
    ) as { n: number };
    return Promise.resolve(row.n);
  }

  async *scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
    const { table } = this.table(def);
    const stmt = this.db.prepare(`SELECT id, doc FROM ${table} WHERE id > ? ORDER BY id LIMIT ?`);
    let after = '';
    for (;;) {
      const rows = stmt.all(after, batchSize) as { id: string; doc: string }[];
      if (rows.length === 0) return;
      for (const r of rows) yield JSON.parse(r.doc) as T;
      after = rows[rows.length - 1]!.id;
      await Promise.resolve();
    }
  }

  /**
   * Commits a batch, taking the write lock without waiting for it on the event loop. The log's
   * writer thread commits to the same file; were this connection to wait for the lock in SQLite's
   * busy handler, the thread serving requests would sleep (up to the 5 s busy timeout, and under a
   * steady stream of appends it could lose that race and fail). Instead the attempt fails at once
   * when the lock is taken and is retried a few milliseconds later, the event loop free meanwhile.
   */
  async commit(batch: CommitBatch): Promise<void> {
    const run = this.db.transaction(() => {
      // A batch none of whose checkpoints moves forward was applied already (a re-delivery, or
      // a second process running the same projector): apply nothing.
      const entries = Object.entries(batch.checkpoints);
      if (entries.length && entries.every(([p, pos]) => (this.checkpointGet.get(p)?.position ?? '') >= pos)) return;
      for (const w of batch.writes) {
        const p = this.collections.get(w.collection);
        if (!p) throw new Error(`collection ${w.collection} is not registered`);
        if (w.op === 'delete') {
          p.del.run(w.id);
        } else {
          const doc = w.doc as Record<string, unknown>;
          p.upsert.run(w.id, JSON.stringify(doc), ...p.def.fields.map((f) => toSql(doc[f] as Scalar)));
        }
      }
      for (const [projector, position] of Object.entries(batch.checkpoints)) this.checkpointPut.run(projector, position);
    });
    const deadline = performance.now() + LOCK_WAIT_MS;
    for (let delay = 1; ; delay = Math.min(delay * 2, 32)) {
      this.db.pragma('busy_timeout = 0');
      try {
        run.immediate();
        return;
      } catch (err) {
        if (!isBusy(err) || performance.now() > deadline) throw err instanceof Error ? err : new Error(String(err));
      } finally {
        this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      }
      await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random())));
    }
  }

  checkpoint(projector: string): Promise<string | null> {
    return Promise.resolve(this.checkpointGet.get(projector)?.position ?? null);
  }

  reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
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
    // Statements prepared against dropped tables are invalid: prepare them again.
    this.statements.clear();
    for (const name of collections) {
      const def = this.collections.get(name)!.def;
      this.collections.delete(name);
      this.prepare(def);
    }
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
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
    if (Array.isArray(v) && v.length === n) return v as (string | number | null)[];
  } catch {
    /* malformed: refused below */
  }
  throw badRequest('cursor is not valid for this query');
}
