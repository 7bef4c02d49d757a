import {
  MongoClient,
  MongoServerError,
  type AnyBulkWriteOperation,
  type ClientSession,
  type Collection,
  type Db,
  type Document,
} from 'mongodb';
import { badRequest } from '../../src/core/errors.js';
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
  Write,
} from '../../src/core/read-store.port.js';

type AnyDef = CollectionDef<any>;
type StoredDoc = { _id: string } & Record<string, unknown>;
interface CheckpointDoc {
  _id: string;
  position: string;
}

const IDENT = /^[a-z][a-z0-9_]*$/i;
const CHECKPOINTS = 'projector_checkpoints';
/** A condition no document meets. */
const NOTHING: Document = { _id: { $in: [] } };
const OPS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in'] as const;

export interface MongoReadStoreOptions {
  /**
   * Whether `commit` runs in a multi-document transaction. `auto` (default) asks the server:
   * replica sets and sharded clusters support them, a standalone server does not.
   */
  transactions?: boolean | 'auto';
}

/**
 * Read models in MongoDB: one collection `rm_<name>` per collection definition, documents stored
 * as `{ _id: id, ...doc }` and returned without `_id`; checkpoints in `projector_checkpoints`.
 *
 * Documents go through JSON on the way in, as in the embedded store: what a read model gets back
 * is exactly what it would get from SQLite (no `undefined` fields, dates as ISO strings).
 *
 * `commit` is guarded by the checkpoint: a batch none of whose checkpoints is newer than the stored
 * one is a re-delivery and is skipped, and a checkpoint never moves backwards. On a replica set the
 * guard, the writes and the checkpoints run in one transaction. On a standalone server there is no
 * transaction: writes land first, then the checkpoints, so a crash in between makes the batch
 * come again and be applied twice; projections are idempotent (see `Projection`), so the read
 * model ends up the same.
 */
export class MongoReadStore implements ReadStore {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly db: Db;
  private readonly defs = new Map<string, AnyDef>();
  private transactions: Promise<boolean> | null = null;
  private ferret: Promise<boolean> | null = null;

  constructor(
    clientOrUrl: MongoClient | string,
    dbName: string,
    private readonly options: MongoReadStoreOptions = {},
  ) {
    this.ownsClient = typeof clientOrUrl === 'string';
    this.client = typeof clientOrUrl === 'string' ? new MongoClient(clientOrUrl) : clientOrUrl;
    this.db = this.client.db(dbName);
  }

  async register(defs: readonly AnyDef[]): Promise<void> {
    for (const def of defs) {
      if (!IDENT.test(def.name)) throw new Error(`bad collection name ${def.name}`);
      for (const f of def.fields) if (!IDENT.test(f)) throw new Error(`bad field name ${f}`);
      await this.ensureCollection(def);
      this.defs.set(def.name, def);
    }
    await this.ensureCollectionNamed(CHECKPOINTS);
  }

  private async ensureCollection(def: AnyDef): Promise<void> {
    await this.ensureCollectionNamed(collectionName(def.name));
    if (def.indexes.length === 0) return;
    // Only the missing ones: FerretDB 1.24 drops the connection when one createIndexes names two
    // indexes that exist already (a second `register`), and MongoDB is spared a no-op.
    const existing = new Set(((await this.coll(def.name).listIndexes().toArray()) as { name?: unknown }[]).map((ix) => String(ix.name)));
    const missing = def.indexes.filter((fields) => !existing.has(indexName(fields)));
    if (missing.length === 0) return;
    // `_id` last: it is the tiebreak of every sort, so a declared index also serves the keyset.
    await this.coll(def.name).createIndexes(
      missing.map((fields) => ({
        key: { ...Object.fromEntries(fields.map((f) => [f, 1])), _id: 1 },
        name: indexName(fields),
      })),
    );
  }

  /** Transactions need their collections to exist beforehand. */
  private async ensureCollectionNamed(name: string): Promise<void> {
    try {
      await this.db.createCollection(name);
    } catch (err) {
      if (!(err instanceof MongoServerError && err.codeName === 'NamespaceExists')) throw err;
    }
  }

  private coll(name: string): Collection<StoredDoc> {
    return this.db.collection<StoredDoc>(collectionName(name));
  }

  private get checkpointDocs(): Collection<CheckpointDoc> {
    return this.db.collection<CheckpointDoc>(CHECKPOINTS);
  }

  async get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
    const doc = await this.coll(def.name).findOne({ _id: id });
    return doc ? fromStored<T>(doc) : null;
  }

  async getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    if (await this.onFerretDb()) return this.getEach(def, ids, out);
    for (let i = 0; i < ids.length; i += 1000) {
      const chunk = ids.slice(i, i + 1000);
      for (const doc of await this.coll(def.name).find({ _id: { $in: chunk } }).toArray()) {
        out.set(doc._id, fromStored<T>(doc));
      }
    }
    return out;
  }

  /**
   * FerretDB 1.x (checked on 1.24.2) pushes an `_id` equality down to PostgreSQL but not `$in` or
   * `$or`: a find by a list of ids reads and decodes the whole collection (1.2 s for 3 ids among
   * 2,000 documents of 10 KB, against 75 ms for 3 lookups), which kept the score history's
   * projector, reading a bucket per restated month, from ever catching up. So one lookup per id,
   * a few at a time (each holds a pool connection).
   */
  private async getEach<T>(def: CollectionDef<T>, ids: readonly string[], out: Map<string, T>): Promise<Map<string, T>> {
    for (let i = 0; i < ids.length; i += 8) {
      const docs = await Promise.all(ids.slice(i, i + 8).map((id) => this.coll(def.name).findOne({ _id: id })));
      for (const doc of docs) if (doc) out.set(doc._id, fromStored<T>(doc));
    }
    return out;
  }

  async find<T>(def: CollectionDef<T>, filter: Filter<T>, options: FindOptions<T> = {}): Promise<Page<T>> {
    const where = [toMongoFilter(def, filter)];
    const sort: [string, 1 | -1][] = (options.sort ?? []).map(([f, d]) => {
      assertField(def, f);
      return [f, d];
    });
    sort.push(['_id', 1]);
    if (options.cursor) where.push(keysetAfter(sort, decodeCursor(options.cursor, sort.length)));
    const limit = options.limit ?? -1;
    if (limit === 0) return { items: [], nextCursor: null };
    const query = this.coll(def.name).find(and(where), { sort });
    if (limit > 0) query.limit(limit + 1);
    const docs = await query.toArray();
    let nextCursor: string | null = null;
    if (limit > 0 && docs.length > limit) {
      docs.length = limit;
      const last = docs[docs.length - 1]!;
      nextCursor = encodeCursor(sort.map(([f]) => toScalar(last[f])));
    }
    return { items: docs.map((d) => fromStored<T>(d)), nextCursor };
  }

  count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    return this.coll(def.name).countDocuments(toMongoFilter(def, filter));
  }

  scan<T>(def: CollectionDef<T>, batchSize = 1000): AsyncIterable<T> {
    return this.scanWith<T>(def, batchSize, undefined);
  }

  private async *scanWith<T>(def: CollectionDef<T>, batchSize: number, session: ClientSession | undefined): AsyncIterable<T> {
    let after: string | null = null;
    for (;;) {
      const docs: StoredDoc[] = await this.coll(def.name)
        .find(after === null ? {} : { _id: { $gt: after } }, { sort: { _id: 1 }, limit: batchSize, session })
        .toArray();
      if (docs.length === 0) return;
      for (const d of docs) yield fromStored<T>(d);
      after = docs[docs.length - 1]!._id;
    }
  }

  /**
   * On a replica set, a snapshot session: every read in it sees one point in time (the server
   * keeps that point for `minSnapshotHistoryWindowInSeconds`, 300 s by default: a longer read
   * fails with SnapshotTooOld). A standalone server has no snapshots: the view is the live data.
   */
  async snapshot(): Promise<ReadSnapshot> {
    const session = (await this.supportsTransactions()) ? this.client.startSession({ snapshot: true }) : undefined;
    // A snapshot session takes its point in time at its first read, not when it starts.
    if (session) await this.checkpointDocs.findOne({ _id: '' }, { session });
    return {
      consistent: session !== undefined,
      scan: <T>(def: CollectionDef<T>, batchSize = 1000) => this.scanWith<T>(def, batchSize, session),
      checkpoint: async (projector) => (await this.checkpointDocs.findOne({ _id: projector }, { session }))?.position ?? null,
      close: async () => {
        await session?.endSession();
      },
    };
  }

  async commit(batch: CommitBatch): Promise<void> {
    // Refuse the whole batch before touching anything, so a bad batch writes nothing even
    // without a transaction.
    for (const w of batch.writes) {
      if (!this.defs.has(w.collection)) throw new Error(`collection ${w.collection} is not registered`);
    }
    const writes = batch.writes.map((w) => (w.op === 'upsert' ? { ...w, doc: normalize(w.doc) } : w));
    const prepared = { writes, checkpoints: batch.checkpoints };
    if (!(await this.supportsTransactions())) {
      await this.apply(prepared, undefined);
      return;
    }
    const session = this.client.startSession();
    try {
      await session.withTransaction(() => this.apply(prepared, session), {
        readConcern: { level: 'snapshot' },
        writeConcern: { w: 'majority' },
      });
    } finally {
      await session.endSession();
    }
  }

  private async apply(batch: CommitBatch, session: ClientSession | undefined): Promise<void> {
    const entries = Object.entries(batch.checkpoints);
    if (entries.length > 0) {
      const stored = await this.checkpointDocs.find({ _id: { $in: entries.map(([p]) => p) } }, { session }).toArray();
      const current = new Map(stored.map((d) => [d._id, d.position]));
      const advances = entries.some(([p, position]) => {
        const s = current.get(p);
        return s === undefined || position > s;
      });
      if (!advances) return; // a re-delivered batch: already applied
    }
    // Consecutive writes to one collection go in ordered bulkWrites; runs keep batch order.
    const perCommand = (await this.onFerretDb()) ? 1 : Number.POSITIVE_INFINITY;
    let i = 0;
    while (i < batch.writes.length) {
      const name = batch.writes[i]!.collection;
      const ops: AnyBulkWriteOperation<StoredDoc>[] = [];
      for (; i < batch.writes.length && batch.writes[i]!.collection === name && ops.length < perCommand; i++) ops.push(toBulkOp(batch.writes[i]!));
      await this.coll(name).bulkWrite(ops, { ordered: true, session });
    }
    if (entries.length > 0) {
      // `$max`: a checkpoint never moves backwards, even when two writers race without a transaction.
      // `updateMany` (one document at most, by `_id`): see `onFerretDb` for why not `updateOne`.
      await this.checkpointDocs.bulkWrite(
        entries.map(([p, position]) => ({
          updateMany: { filter: { _id: p }, update: { $max: { position } }, upsert: true },
        })),
        { ordered: true, session },
      );
    }
  }

  private supportsTransactions(): Promise<boolean> {
    const configured = this.options.transactions ?? 'auto';
    if (configured !== 'auto') return Promise.resolve(configured);
    this.transactions ??= this.db
      .admin()
      .command({ hello: 1 })
      .then((hello) => typeof hello['setName'] === 'string' || hello['msg'] === 'isdbgrid')
      .catch((err: unknown) => {
        this.transactions = null; // ask again next time
        throw err;
      });
    return this.transactions;
  }

  /**
   * Whether the server is FerretDB (1.x, checked up to 1.24.2), which needs two things done its way:
   * - one write per `update` command: it keeps the PostgreSQL query of every single-document
   *   statement of a command open until the whole command is done (`defer closer.Close()` in a loop
   *   in its `updateDocument`), and each statement that matches a document takes a second
   *   connection for its write; a batch replacing more existing documents than its pool holds
   *   (`pool_max_conns`, 50 by default) waits forever on itself, and every other command, even
   *   `ping`, behind it. One statement per command holds two connections at most; MongoDB gets the
   *   whole run in one command;
   * - lookups by id one at a time (`getEach`): it does not push `$in` down to PostgreSQL.
   */
  private onFerretDb(): Promise<boolean> {
    this.ferret ??= this.db
      .admin()
      .command({ buildInfo: 1 })
      .then((info) => info['ferretdbVersion'] !== undefined)
      .catch((err: unknown) => {
        this.ferret = null; // ask again next time
        throw err;
      });
    return this.ferret;
  }

  async checkpoint(projector: string): Promise<string | null> {
    const doc = await this.checkpointDocs.findOne({ _id: projector });
    return doc?.position ?? null;
  }

  async checkpoints(projectors: readonly string[]): Promise<Map<string, string>> {
    const docs = await this.checkpointDocs.find({ _id: { $in: [...projectors] } }).toArray();
    return new Map(docs.map((d) => [d._id, d.position]));
  }

  async reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    const defs = collections.map((name) => {
      const def = this.defs.get(name);
      if (!def) throw new Error(`collection ${name} is not registered`);
      return def;
    });
    for (const def of defs) {
      // Dropping is far quicker than deleting millions of documents; indexes are made again.
      await this.coll(def.name).drop().catch((err: unknown) => {
        if (!(err instanceof MongoServerError && err.codeName === 'NamespaceNotFound')) throw err;
      });
      await this.ensureCollection(def);
    }
    if (projectors.length > 0) await this.checkpointDocs.deleteMany({ _id: { $in: [...projectors] } });
  }

  /** Removes collections and checkpoints altogether (a retired generation of the read models; docs/scaling.md). */
  async drop(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    for (const name of collections) {
      if (!IDENT.test(name)) throw new Error(`bad collection name ${name}`);
      await this.coll(name).drop().catch((err: unknown) => {
        if (!(err instanceof MongoServerError && err.codeName === 'NamespaceNotFound')) throw err;
      });
      this.defs.delete(name);
    }
    if (projectors.length > 0) await this.checkpointDocs.deleteMany({ _id: { $in: [...projectors] } });
  }

  /** Removes the whole database (test teardown). */
  async dropDatabase(): Promise<void> {
    await this.db.dropDatabase();
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }
}

function collectionName(name: string): string {
  return `rm_${name}`;
}

function indexName(fields: readonly string[]): string {
  return `ix_${fields.join('__')}`;
}

function toBulkOp(w: Write): AnyBulkWriteOperation<StoredDoc> {
  if (w.op === 'delete') return { deleteOne: { filter: { _id: w.id } } };
  return { replaceOne: { filter: { _id: w.id }, replacement: { ...(w.doc as Record<string, unknown>), _id: w.id }, upsert: true } };
}

/**
 * The JSON round trip the embedded store applies, so both stores return the same documents, with
 * the keys escaped (`storedKeys`).
 */
function normalize(doc: unknown): Record<string, unknown> {
  const copy = storedKeys(JSON.parse(JSON.stringify(doc)), escapeKey) as Record<string, unknown>;
  delete copy['_id'];
  return copy;
}

function fromStored<T>(doc: StoredDoc): T {
  const { _id, ...rest } = doc;
  return storedKeys(rest, unescapeKey) as T;
}

/**
 * Keys as stored: a read model may key a map by ticker (`BRK.B`), and FerretDB (like MongoDB before
 * 5.0) refuses a key with a dot, or one starting with `$`. So `%`, `.` and `$` in keys are
 * percent-encoded on the way in and decoded on the way out. Queryable fields are identifiers, so
 * filters and sorts never name an escaped key.
 */
function storedKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => storedKeys(v, rename));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[rename(k)] = storedKeys(v, rename);
  return out;
}

const escapeKey = (key: string): string => (/[%.$]/.test(key) ? key.replace(/[%.$]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`) : key);
const unescapeKey = (key: string): string => (key.includes('%') ? key.replace(/%(25|2E|24)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : key);

function toScalar(v: unknown): Scalar {
  return v === undefined ? null : (v as Scalar);
}

function and(parts: Document[]): Document {
  const real = parts.filter((p) => Object.keys(p).length > 0);
  if (real.length === 0) return {};
  return real.length === 1 ? real[0]! : { $and: real };
}

function assertField(def: AnyDef, field: string): void {
  if (!def.fields.includes(field)) {
    throw new Error(`collection ${def.name}: field ${field} is not declared queryable`);
  }
}

/**
 * The port's filter in MongoDB terms. `null` is a value: `{ f: null }` and `{ $eq: null }` match
 * documents where the field is null (or absent), `$ne: v` matches them when v is not null.
 */
function toMongoFilter(def: AnyDef, filter: Filter<unknown>): Document {
  const parts: Document[] = [];
  for (const [field, cond] of Object.entries<FieldCondition | undefined>(filter)) {
    if (cond === undefined) continue;
    assertField(def, field);
    if (cond === null || typeof cond !== 'object') {
      parts.push({ [field]: cond });
      continue;
    }
    const ops: Document = {};
    for (const op of OPS) if (cond[op] !== undefined) ops[op] = cond[op];
    if (Object.keys(ops).length > 0) parts.push({ [field]: ops });
  }
  return and(parts);
}

/**
 * Documents strictly after `values` in the order `sort` (keyset pagination). Nulls sort first,
 * as in SQLite; MongoDB's `$gt`/`$lt` never match across types, so null is spelled out.
 */
function keysetAfter(sort: [string, 1 | -1][], values: Scalar[]): Document {
  const ors: Document[] = [];
  for (let k = 0; k < sort.length; k++) {
    const [field, dir] = sort[k]!;
    const v = values[k] ?? null;
    let beyond: Document | null;
    if (dir === 1) beyond = v === null ? { [field]: { $ne: null } } : { [field]: { $gt: v } };
    else beyond = v === null ? null : { $or: [{ [field]: { $lt: v } }, { [field]: null }] };
    if (beyond === null) continue;
    const equal = sort.slice(0, k).map(([f], j) => ({ [f]: values[j] ?? null }));
    ors.push(and([...equal, beyond]));
  }
  return ors.length === 0 ? NOTHING : { $or: ors };
}

function encodeCursor(values: Scalar[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

function decodeCursor(cursor: string, n: number): Scalar[] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === n && v.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))) {
      return v as Scalar[];
    }
  } catch {
    /* malformed: refused below */
  }
  throw badRequest('cursor is not valid for this query');
}
