import { createHash } from 'node:crypto';
import type pg from 'pg';
import { badRequest } from '../../src/core/errors.js';
import type {
  CollectionDef,
  CommitBatch,
  Filter,
  FindOptions,
  Page,
  ReadSnapshot,
  ReadStore,
  Write,
} from '../../src/core/read-store.port.js';
import { checkSchemaName, openPool, preferLz4 } from './database.js';
import { IDENT, assertField, encodeKey, fieldColumn, keysetAfter, orderBy, quote, whereClause } from './read-store.sql.js';

type AnyDef = CollectionDef<any>;
type Queryable = Pick<pg.ClientBase, 'query'>;

interface Table {
  def: AnyDef;
  /** Schema-qualified, quoted. */
  name: string;
  columns: string[];
}

/** Rows per INSERT statement of a commit: a rebuild's batch is cut into statements of about this many documents. */
const ROWS_PER_STATEMENT = 2_000;

export interface PostgresReadStoreOptions {
  /** The schema that holds the read models (one per deployment, or per test run). */
  schema?: string;
  /** Connections in this process's pool. */
  poolMax?: number;
}

/**
 * Read models in PostgreSQL: a table `rm_<name>` per collection, `(id, doc json, f_<field>…)`,
 * with each declared index a real btree index over the fields' columns (and the id, the tiebreak
 * of every sort), so filters, sorts, limits and cursors run in SQL. The document is `json`, not
 * `jsonb`: it keeps its text, key order included, so readers get exactly what the embedded store
 * returns. Field columns hold `encodeKey` values (read-store.sql.ts).
 *
 * `commit` is one transaction: the writes of every collection and the checkpoints land together or
 * not at all. It first locks the batch's projectors (transaction-scoped advisory locks, in name
 * order) and reads their checkpoints: a batch none of whose checkpoints moves forward was applied
 * already and is skipped, so a re-delivery never applies a batch twice and a kill between a
 * batch's writes and its checkpoint leaves nothing behind (test/integration/projection-kill-postgres.test.ts).
 * The projections' own re-delivery guards have nothing to catch after a kill here; they stay for
 * the MongoDB-wire store (no transactions) and for the one commit a paused lease owner may still
 * land after its lease moved on (docs/architecture.md, "Exactly-once projection on PostgreSQL").
 */
export class PostgresReadStore implements ReadStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly tables = new Map<string, Table>();
  private schemaReady: Promise<void> | null = null;

  constructor(url: string, options: PostgresReadStoreOptions = {}) {
    this.schema = checkSchemaName(options.schema ?? 'read_models');
    // A read-model commit does not wait for its WAL flush: read models are rebuilt from the log, and
    // a crash of the server loses only the last commits, each whole (documents and checkpoints
    // together), which the projector then makes again from the checkpoint before them. The log's
    // appends keep their durable commits (its own pool). A commit waited up to 250 ms for the flush
    // on a busy disk, checkpoint-only commits included.
    this.pool = openPool(url, { max: options.poolMax ?? 8, applicationName: 'scores-read-models', settings: { synchronous_commit: 'off' } });
  }

  private get checkpointTable(): string {
    return `${quote(this.schema)}.projector_checkpoints`;
  }

  async register(defs: readonly AnyDef[]): Promise<void> {
    for (const def of defs) {
      if (!IDENT.test(def.name)) throw new Error(`bad collection name ${def.name}`);
      for (const f of def.fields) if (!IDENT.test(f)) throw new Error(`bad field name ${f}`);
    }
    await this.ensureSchema();
    await this.ddl(async (client) => {
      for (const def of defs) await this.createTable(client, def);
    });
    for (const def of defs) this.tables.set(def.name, this.tableOf(def));
  }

  private ensureSchema(): Promise<void> {
    this.schemaReady ??= this.ddl(async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quote(this.schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.checkpointTable} (projector text COLLATE "C" PRIMARY KEY, position text COLLATE "C" NOT NULL)`,
      );
    }).catch((err: unknown) => {
      this.schemaReady = null;
      throw err;
    });
    return this.schemaReady;
  }

  /**
   * DDL in a transaction holding one advisory lock per schema: `CREATE … IF NOT EXISTS` from two
   * processes starting at once would otherwise collide on the catalog's unique indexes.
   */
  private async ddl(run: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`read-models-ddl/${this.schema}`]);
      await run(client);
    });
  }

  private tableOf(def: AnyDef): Table {
    return { def, name: `${quote(this.schema)}.${quote(`rm_${def.name}`)}`, columns: def.fields.map(fieldColumn) };
  }

  private async createTable(client: Queryable, def: AnyDef): Promise<void> {
    const table = this.tableOf(def);
    const columns = table.columns.map((c) => `, ${c} text COLLATE "C"`).join('');
    await client.query(`CREATE TABLE IF NOT EXISTS ${table.name} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL${columns})`);
    await preferLz4(client, table.name, 'doc');
    for (const c of table.columns) await client.query(`ALTER TABLE ${table.name} ADD COLUMN IF NOT EXISTS ${c} text COLLATE "C"`);
    for (const fields of def.indexes) {
      const keys = [...fields.map((f) => `${fieldColumn(f)} NULLS FIRST`), 'id'].join(', ');
      await client.query(`CREATE INDEX IF NOT EXISTS ${quote(indexName(def.name, fields))} ON ${table.name} (${keys})`);
    }
  }

  private table(def: AnyDef): Table {
    let table = this.tables.get(def.name);
    if (!table) {
      // Reads of a collection this process never registered (a generation another process built).
      if (!IDENT.test(def.name)) throw new Error(`bad collection name ${def.name}`);
      table = this.tableOf(def);
    }
    return table;
  }

  async get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
    const { rows } = await this.query<{ doc: T }>(`SELECT doc FROM ${this.table(def).name} WHERE id = $1`, [id]);
    return rows[0]?.doc ?? null;
  }

  async getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    if (ids.length === 0) return out;
    const { rows } = await this.query<{ id: string; doc: T }>(`SELECT id, doc FROM ${this.table(def).name} WHERE id = ANY($1::text[])`, [ids]);
    for (const r of rows) out.set(r.id, r.doc);
    return out;
  }

  async find<T>(def: CollectionDef<T>, filter: Filter<T>, options: FindOptions<T> = {}): Promise<Page<T>> {
    const table = this.table(def);
    const where = whereClause(def, filter);
    const sort: [string, 1 | -1][] = (options.sort ?? []).map(([f, d]) => {
      assertField(def, f);
      return [fieldColumn(f), d];
    });
    sort.push(['id', 1]);
    if (options.cursor) keysetAfter(where, sort, decodeCursor(options.cursor, sort.length));
    const limit = options.limit ?? -1;
    if (limit === 0) return { items: [], nextCursor: null };
    const keys = sort.slice(0, -1).map(([c], i) => `, ${c} AS k${i}`).join('');
    const sql = `SELECT id, doc${keys} FROM ${table.name}${where.toString()} ORDER BY ${orderBy(sort)}${limit > 0 ? ` LIMIT ${limit + 1}` : ''}`;
    const { rows } = await this.query<Record<string, unknown> & { id: string; doc: T }>(sql, where.params);
    let nextCursor: string | null = null;
    if (limit > 0 && rows.length > limit) {
      rows.length = limit;
      const last = rows[rows.length - 1]!;
      nextCursor = encodeCursor([...sort.slice(0, -1).map((_, i) => (last[`k${i}`] as string | null) ?? null), last.id]);
    }
    return { items: rows.map((r) => r.doc), nextCursor };
  }

  async count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    const where = whereClause(def, filter);
    const { rows } = await this.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.table(def).name}${where.toString()}`, where.params);
    return Number(rows[0]!.n);
  }

  scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
    return this.scanWith<T>(this.pool, this.table(def).name, batchSize);
  }

  private async *scanWith<T>(client: Queryable, table: string, batchSize: number): AsyncIterable<T> {
    let after: string | null = null;
    for (;;) {
      const { rows }: { rows: { id: string; doc: T }[] } = await client.query(
        `SELECT id, doc FROM ${table}${after === null ? '' : ' WHERE id > $2'} ORDER BY id LIMIT $1`,
        after === null ? [batchSize] : [batchSize, after],
      );
      if (rows.length === 0) return;
      for (const r of rows) yield r.doc;
      after = rows[rows.length - 1]!.id;
    }
  }

  /** A repeatable-read transaction on a connection of its own: every read in it sees the commit it started at. */
  async snapshot(): Promise<ReadSnapshot> {
    await this.ensureSchema();
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      // The snapshot is taken at the transaction's first statement.
      await client.query(`SELECT 1 FROM ${this.checkpointTable} LIMIT 1`);
    } catch (err) {
      client.release(true);
      throw err;
    }
    let open = true;
    const exists = async (table: string) => (await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [table])).rows[0]!.t !== null;
    const scanWith = this.scanWith.bind(this);
    const schema = quote(this.schema);
    const checkpoints = this.checkpointTable;
    return {
      consistent: true,
      async *scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
        if (!IDENT.test(def.name) || !open) return;
        const table = `${schema}.${quote(`rm_${def.name}`)}`;
        // A collection no one had created when the snapshot was taken is empty in it.
        if (!(await exists(table))) return;
        yield* scanWith<T>(client, table, batchSize);
      },
      checkpoint: async (projector) => (await client.query<{ position: string }>(`SELECT position FROM ${checkpoints} WHERE projector = $1`, [projector])).rows[0]?.position ?? null,
      close: async () => {
        if (!open) return;
        open = false;
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      },
    };
  }

  async commit(batch: CommitBatch): Promise<void> {
    // Refuse a bad batch before touching anything.
    for (const w of batch.writes) if (!this.tables.has(w.collection)) throw new Error(`collection ${w.collection} is not registered`);
    const projectors = Object.keys(batch.checkpoints).sort();
    // A batch that wrote nothing only moves checkpoints: one statement (its own transaction), not
    // five round trips. Most of a worker's read models see a metered call's debit as such a batch.
    if (batch.writes.length === 0) {
      if (projectors.length > 0) await this.pool.query(this.moveCheckpoints, [projectors, projectors.map((p) => batch.checkpoints[p]!)]);
      return;
    }
    await this.transaction(async (client) => {
      if (projectors.length > 0 && !(await this.advances(client, batch.checkpoints, projectors))) return;
      for (const [collection, writes] of lastWriteOfEachId(batch.writes)) await this.write(client, this.tables.get(collection)!, writes);
      if (projectors.length > 0) await client.query(this.moveCheckpoints, [projectors, projectors.map((p) => batch.checkpoints[p]!)]);
    });
  }

  /** Checkpoints forward, never backwards. */
  private get moveCheckpoints(): string {
    return `INSERT INTO ${this.checkpointTable} (projector, position) SELECT * FROM unnest($1::text[], $2::text[])
      ON CONFLICT (projector) DO UPDATE SET position = GREATEST(${this.checkpointTable}.position, EXCLUDED.position)`;
  }

  /** Locks the projectors for the transaction and tells whether any of the batch's checkpoints is newer than the stored one. */
  private async advances(client: Queryable, checkpoints: Record<string, string>, projectors: string[]): Promise<boolean> {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1 || p, 0)) FROM unnest($2::text[]) WITH ORDINALITY AS u(p, n) ORDER BY n', [
      `read-models/${this.schema}/`,
      projectors,
    ]);
    const { rows } = await client.query<{ projector: string; position: string }>(
      `SELECT projector, position FROM ${this.checkpointTable} WHERE projector = ANY($1::text[])`,
      [projectors],
    );
    const stored = new Map(rows.map((r) => [r.projector, r.position]));
    return projectors.some((p) => {
      const s = stored.get(p);
      return s === undefined || checkpoints[p]! > s;
    });
  }

  /** One collection's writes: the deletes in one statement, the upserts in statements of `ROWS_PER_STATEMENT`. */
  private async write(client: Queryable, table: Table, writes: Write[]): Promise<void> {
    const deletes = writes.filter((w) => w.op === 'delete').map((w) => w.id);
    if (deletes.length) await client.query(`DELETE FROM ${table.name} WHERE id = ANY($1::text[])`, [deletes]);
    const upserts = writes.filter((w): w is Extract<Write, { op: 'upsert' }> => w.op === 'upsert');
    const sets = ['doc', ...table.columns].map((c) => `${c} = EXCLUDED.${c}`).join(', ');
    const picks = table.columns.map((_, i) => `, r.k->>${i}`).join('');
    const sql =
      `INSERT INTO ${table.name} (id, doc${table.columns.map((c) => `, ${c}`).join('')}) ` +
      `SELECT r.i, r.d${picks} FROM json_to_recordset($1::json) AS r(i text, d json, k json) ON CONFLICT (id) DO UPDATE SET ${sets}`;
    for (let i = 0; i < upserts.length; i += ROWS_PER_STATEMENT) {
      await client.query(sql, [rowsJson(table.def, upserts.slice(i, i + ROWS_PER_STATEMENT))]);
    }
  }

  async checkpoint(projector: string): Promise<string | null> {
    await this.ensureSchema();
    const { rows } = await this.query<{ position: string }>(`SELECT position FROM ${this.checkpointTable} WHERE projector = $1`, [projector]);
    return rows[0]?.position ?? null;
  }

  async checkpoints(projectors: readonly string[]): Promise<Map<string, string>> {
    await this.ensureSchema();
    const { rows } = await this.query<{ projector: string; position: string }>(`SELECT projector, position FROM ${this.checkpointTable} WHERE projector = ANY($1::text[])`, [projectors]);
    return new Map(rows.map((r) => [r.projector, r.position]));
  }

  async reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    const tables = collections.map((name) => {
      const table = this.tables.get(name);
      if (!table) throw new Error(`collection ${name} is not registered`);
      return table;
    });
    await this.transaction(async (client) => {
      if (tables.length) await client.query(`TRUNCATE ${tables.map((t) => t.name).join(', ')}`);
      await client.query(`DELETE FROM ${this.checkpointTable} WHERE projector = ANY($1::text[])`, [projectors]);
    });
  }

  /** Removes collections and checkpoints altogether (a retired generation of the read models; docs/scaling.md). */
  async drop(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    for (const name of collections) if (!IDENT.test(name)) throw new Error(`bad collection name ${name}`);
    await this.ensureSchema();
    await this.transaction(async (client) => {
      for (const name of collections) await client.query(`DROP TABLE IF EXISTS ${quote(this.schema)}.${quote(`rm_${name}`)}`);
      await client.query(`DELETE FROM ${this.checkpointTable} WHERE projector = ANY($1::text[])`, [projectors]);
    });
    for (const name of collections) this.tables.delete(name);
  }

  /** Removes the whole schema (test teardown). */
  async dropSchema(): Promise<void> {
    await this.pool.query(`DROP SCHEMA IF EXISTS ${quote(this.schema)} CASCADE`);
    this.schemaReady = null;
    this.tables.clear();
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** A query on the pool; a table that does not exist yet (never registered by anyone) reads as empty. */
  private async query<Row extends pg.QueryResultRow>(text: string, params: unknown[]): Promise<pg.QueryResult<Row>> {
    try {
      return await this.pool.query<Row>(text, params);
    } catch (err) {
      if ((err as { code?: string }).code === UNDEFINED_TABLE && text.startsWith('SELECT')) {
        return { rows: [], rowCount: 0, command: 'SELECT', oid: 0, fields: [] };
      }
      throw err;
    }
  }

  private async transaction(run: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      await run(client);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

const UNDEFINED_TABLE = '42P01';

/** PostgreSQL cuts identifiers at 63 bytes: a long index name keeps a hash of the whole. */
function indexName(collection: string, fields: readonly string[]): string {
  const name = `rm_${collection}__${fields.join('__')}`;
  return name.length <= 63 ? name : `${name.slice(0, 50)}_${createHash('sha256').update(name).digest('hex').slice(0, 12)}`;
}

/** Each collection's writes, the last one of each id only (a batch's later write of an id wins), in first-seen collection order. */
function lastWriteOfEachId(writes: readonly Write[]): Map<string, Write[]> {
  const last = new Map<string, Map<string, Write>>();
  for (const w of writes) {
    let ids = last.get(w.collection);
    if (!ids) last.set(w.collection, (ids = new Map<string, Write>()));
    ids.delete(w.id);
    ids.set(w.id, w);
  }
  return new Map([...last].map(([c, ids]) => [c, [...ids.values()]]));
}

/**
 * The upserts as one JSON array for `json_to_recordset`: `i` the id, `d` the document (its JSON
 * text, written once), `k` the field columns' values.
 */
function rowsJson(def: AnyDef, upserts: readonly Extract<Write, { op: 'upsert' }>[]): string {
  const parts: string[] = [];
  for (const w of upserts) {
    const doc = w.doc as Record<string, unknown>;
    const keys = def.fields.map((f) => encodeKey(doc[f]));
    parts.push(`{"i":${JSON.stringify(w.id)},"d":${JSON.stringify(doc)},"k":${JSON.stringify(keys)}}`);
  }
  return `[${parts.join(',')}]`;
}

function encodeCursor(values: (string | null)[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

function decodeCursor(cursor: string, n: number): (string | null)[] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === n && v.every((x) => x === null || typeof x === 'string')) return v as (string | null)[];
  } catch {
    /* malformed: refused below */
  }
  throw badRequest('cursor is not valid for this query');
}
