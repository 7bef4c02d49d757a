import type { CollectionDef, CommitBatch, Filter, FindOptions, Page, ReadSnapshot, ReadStore } from '../../src/core/read-store.port.js';

/** One read a query made: what it read, how, and how many documents came back. */
export interface CountedRead {
  op: 'get' | 'getMany' | 'find' | 'count' | 'scan' | 'snapshot' | 'checkpoint';
  collection: string;
  /** A `find` without a `limit`, a `scan` or a `snapshot`: its cost grows with the collection. */
  unbounded: boolean;
  docs: number;
}

/**
 * The ReadStore port, passed through, with every read recorded: what a call costs the read
 * models, counted rather than timed.
 */
export class CountingReadStore implements ReadStore {
  readonly reads: CountedRead[] = [];

  constructor(private readonly store: ReadStore) {}

  /** The reads recorded while `fn` runs. */
  async during(fn: () => Promise<unknown>): Promise<CountedRead[]> {
    const from = this.reads.length;
    await fn();
    return this.reads.slice(from);
  }

  register(defs: readonly CollectionDef<any>[]): Promise<void> {
    return this.store.register(defs);
  }

  async get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
    const doc = await this.store.get(def, id);
    this.reads.push({ op: 'get', collection: def.name, unbounded: false, docs: doc === null ? 0 : 1 });
    return doc;
  }

  async getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
    const docs = await this.store.getMany(def, ids);
    this.reads.push({ op: 'getMany', collection: def.name, unbounded: false, docs: docs.size });
    return docs;
  }

  async find<T>(def: CollectionDef<T>, filter: Filter<T>, options?: FindOptions<T>): Promise<Page<T>> {
    const page = await this.store.find(def, filter, options);
    this.reads.push({ op: 'find', collection: def.name, unbounded: options?.limit === undefined, docs: page.items.length });
    return page;
  }

  async count<T>(def: CollectionDef<T>, filter: Filter<T>): Promise<number> {
    const n = await this.store.count(def, filter);
    this.reads.push({ op: 'count', collection: def.name, unbounded: false, docs: 0 });
    return n;
  }

  async *scan<T>(def: CollectionDef<T>, batchSize?: number): AsyncIterable<T> {
    const read: CountedRead = { op: 'scan', collection: def.name, unbounded: true, docs: 0 };
    this.reads.push(read);
    for await (const doc of this.store.scan(def, batchSize)) {
      read.docs++;
      yield doc;
    }
  }

  snapshot(): Promise<ReadSnapshot> {
    this.reads.push({ op: 'snapshot', collection: '', unbounded: true, docs: 0 });
    return this.store.snapshot();
  }

  commit(batch: CommitBatch): Promise<void> {
    return this.store.commit(batch);
  }

  async checkpoint(projector: string): Promise<string | null> {
    this.reads.push({ op: 'checkpoint', collection: projector, unbounded: false, docs: 0 });
    return this.store.checkpoint(projector);
  }

  reset(collections: readonly string[], projectors: readonly string[]): Promise<void> {
    return this.store.reset(collections, projectors);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
