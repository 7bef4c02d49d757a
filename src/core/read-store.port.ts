/**
 * ReadStore port: typed document collections for read models, plus projector checkpoints.
 * Adapters: infra/sqlite (embedded default), infra/postgresql (the scaled deployment's), infra/mongodb.
 *
 * Filters, sorts and cursors may only use fields a collection declares in `fields`: each adapter
 * indexes exactly those, so a query can never silently become a full scan.
 */

export type Scalar = string | number | boolean | null;

export interface CollectionDef<T> {
  name: string;
  /** The document id; unique within the collection. */
  key(doc: T): string;
  /** Queryable fields (top-level, scalar values). */
  fields: readonly (keyof T & string)[];
  /** Compound indexes over `fields`, in query order, e.g. [['ticker','date'], ['restated_at']]. */
  indexes: readonly (readonly (keyof T & string)[])[];
}

export function defineCollection<T>(def: CollectionDef<T>): CollectionDef<T> {
  return def;
}

export type FieldCondition =
  | Scalar
  | { $eq?: Scalar; $gt?: Scalar; $gte?: Scalar; $lt?: Scalar; $lte?: Scalar; $in?: Scalar[]; $ne?: Scalar };

export type Filter<T> = { [K in keyof T & string]?: FieldCondition };

export type SortSpec<T> = readonly (readonly [keyof T & string, 1 | -1])[];

export interface FindOptions<T> {
  sort?: SortSpec<T>;
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor` (same filter and sort). */
  cursor?: string | null;
}

export interface Page<T> {
  items: T[];
  /** Present when more items match. */
  nextCursor: string | null;
}

export type Write =
  | { op: 'upsert'; collection: string; id: string; doc: unknown }
  | { op: 'delete'; collection: string; id: string };

export interface CommitBatch {
  writes: Write[];
  /** projector name → position of the last event the writes include. */
  checkpoints: Record<string, string>;
}

/**
 * One consistent view of the read models for a long read (a bulk export): every scan in it sees
 * the same commit, whatever projectors commit meanwhile. Close it when done (it may pin an old
 * version of the data, e.g. SQLite's WAL cannot be checkpointed past it).
 */
export interface ReadSnapshot {
  /** Every document of a collection as of the snapshot, in id order, `batchSize` at a time. */
  scan<T>(def: CollectionDef<T>, batchSize?: number): AsyncIterable<T>;
  /** A projector's checkpoint as of the snapshot: the log position the view reflects for it. */
  checkpoint(projector: string): Promise<string | null>;
  /** Whether the view really is one commit (false where the backing server cannot give one, e.g. a standalone MongoDB). */
  readonly consistent: boolean;
  close(): Promise<void>;
}

export interface ReadStore {
  /** Creates tables / indexes for the collections. Idempotent. */
  register(defs: readonly CollectionDef<never>[] | readonly CollectionDef<any>[]): Promise<void>;
  get<T>(def: CollectionDef<T>, id: string): Promise<T | null>;
  getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>>;
  find<T>(def: CollectionDef<T>, filter: Filter<T>, options?: FindOptions<T>): Promise<Page<T>>;
  count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number>;
  /** Every document, in id order (for replay comparisons and exports). */
  scan<T>(def: CollectionDef<T>, batchSize?: number): AsyncIterable<T>;
  /** A consistent view for long reads (see ReadSnapshot); the caller closes it. */
  snapshot(): Promise<ReadSnapshot>;
  /**
   * Applies writes and checkpoints atomically (embedded, PostgreSQL) or position-guarded (MongoDB without transactions). A batch
   * with no checkpoints is applied as it is: a cache kept beside the read models (ledger
   * snapshots), not a projection's output.
   */
  commit(batch: CommitBatch): Promise<void>;
  checkpoint(projector: string): Promise<string | null>;
  /**
   * Several projectors' checkpoints in one read (absent: none yet). Optional: where it is missing
   * (the embedded store, whose reads cost no round trip) `checkpointsOf` asks one by one.
   */
  checkpoints?(projectors: readonly string[]): Promise<Map<string, string>>;
  /**
   * Removes the collections themselves (indexes included) and the checkpoints: a retired
   * generation of the read models (docs/scaling.md). Optional: a store without it cannot switch
   * generations (the embedded one, where a replay runs with the service stopped).
   */
  drop?(collections: readonly string[], projectors: readonly string[]): Promise<void>;
  /** Drops the documents of the collections and the checkpoints of the projectors. */
  reset(collections: readonly string[], projectors: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** For a store that wraps another: `names`' checkpoints in `inner` (one read where it can), keyed by `projectors` (the same order). */
export async function checkpointsIn(inner: ReadStore, names: readonly string[], projectors: readonly string[] = names): Promise<Map<string, string>> {
  const found = await checkpointsOf(inner, names);
  return new Map(projectors.flatMap((p, i) => (found[i] == null ? [] : [[p, found[i]] as [string, string]])));
}

/** `projectors`' checkpoints (null: none yet), in one read where the store offers it. */
export async function checkpointsOf(store: Pick<ReadStore, 'checkpoint' | 'checkpoints'>, projectors: readonly string[]): Promise<(string | null)[]> {
  if (!store.checkpoints) return Promise.all(projectors.map((p) => store.checkpoint(p)));
  const found = await store.checkpoints(projectors);
  return projectors.map((p) => found.get(p) ?? null);
}
