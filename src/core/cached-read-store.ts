import type { RecordedEvent } from './event-store.port.js';
import { checkpointsIn, type CollectionDef, type CommitBatch, type Filter, type FindOptions, type Page, type ReadSnapshot, type ReadStore } from './read-store.port.js';

/** A small, hot collection whose documents `get` / `getMany` may serve from memory. */
export interface CachedCollection {
  def: CollectionDef<any>;
  /** The event types whose projection writes the collection: any of them drops its cache. */
  eventTypes: readonly string[];
}

/**
 * The queries' view of a ReadStore, with `get` / `getMany` of a few small, hot collections served
 * from memory (the latest score of each ticker is read by every metered score call). Everything
 * else goes to the store.
 *
 * Exactness: the owner calls `invalidate(batch)` after every projector batch is committed, and a
 * collection's documents are dropped as soon as a batch holds an event its projection handles. A
 * read that overlaps such a drop is not kept. Cached documents are frozen, so a query that tried
 * to modify one would fail loudly instead of corrupting what the next caller sees. Projections
 * never read through this view (they mutate the documents they load).
 */
export class CachedReadStore implements ReadStore {
  private readonly docs = new Map<string, Map<string, Promise<unknown>>>();
  private readonly byEventType = new Map<string, string[]>();
  private generation = 0;

  constructor(
    private readonly store: ReadStore,
    collections: readonly CachedCollection[],
  ) {
    for (const c of collections) {
      this.docs.set(c.def.name, new Map());
      for (const type of c.eventTypes) this.byEventType.set(type, [...(this.byEventType.get(type) ?? []), c.def.name]);
    }
  }

  /** Drops the cache of every collection a projection of these (committed) events writes. */
  invalidate(batch: readonly RecordedEvent[]): void {
    let dropped = false;
    for (const e of batch) {
      for (const name of this.byEventType.get(e.type) ?? []) {
        const m = this.docs.get(name)!;
        if (m.size) m.clear();
        dropped = true;
      }
    }
    if (dropped) this.generation++;
  }

  get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
    const cache = this.docs.get(def.name);
    if (!cache) return this.store.get(def, id);
    const hit = cache.get(id);
    if (hit) return hit as Promise<T | null>;
    const generation = this.generation;
    const loaded = this.store.get(def, id).then((doc) => (doc === null ? null : deepFreeze(doc)));
    cache.set(id, loaded);
    const forget = () => {
      if (cache.get(id) === loaded) cache.delete(id);
    };
    loaded.then(() => generation !== this.generation && forget(), forget);
    return loaded;
  }

  async getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    if (!this.docs.has(def.name)) return this.store.getMany(def, ids);
    const out = new Map<string, T>();
    const docs = await Promise.all(ids.map((id) => this.get(def, id)));
    ids.forEach((id, i) => {
      const doc = docs[i];
      if (doc != null) out.set(id, doc);
    });
    return out;
  }

  register(defs: readonly CollectionDef<any>[]): Promise<void> {
    return this.store.register(defs);
  }

  find<T>(def: CollectionDef<T>, filter: Filter<T>, options?: FindOptions<T>): Promise<Page<T>> {
    return this.store.find(def, filter, options);
  }

  count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    return this.store.count(def, filter);
  }

  scan<T>(def: CollectionDef<T>, batchSize?: number): AsyncIterable<T> {
    return this.store.scan(def, batchSize);
  }

  snapshot(): Promise<ReadSnapshot> {
    return this.store.snapshot();
  }

  async commit(batch: CommitBatch): Promise<void> {
    await this.store.commit(batch);
    this.clear();
  }

  checkpoint(projector: string): Promise<string | null> {
    return this.store.checkpoint(projector);
  }
  checkpoints(projectors: readonly string[]): Promise<Map<string, string>> {
    return checkpointsIn(this.store, projectors);
  }

  async reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    await this.store.reset(collections, projectors);
    this.clear();
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** Drops every cached document (the read models were switched to another generation). */
  clear(): void {
    for (const m of this.docs.values()) m.clear();
    this.generation++;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
