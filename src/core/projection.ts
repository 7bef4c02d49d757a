import type { RecordedEvent } from './event-store.port.js';
import type { CollectionDef } from './read-store.port.js';

/**
 * What a projection sees while it applies events: reads see the writes made earlier in the same
 * batch, writes are buffered and committed together with the checkpoint.
 */
export interface ProjectionContext {
  get<T>(def: CollectionDef<T>, id: string): Promise<T | null>;
  getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>>;
  upsert<T>(def: CollectionDef<T>, doc: T): void;
  delete<T>(def: CollectionDef<T>, id: string): void;
}

/**
 * A read model builder. `apply` must be idempotent (applying an event twice changes nothing) and
 * must never reject an event: what it cannot use, it ignores.
 *
 * A store without transactions (MongoDB standalone, FerretDB) may stop half-way through a commit,
 * whose writes land in order: collection by collection, in the order each was first written. A
 * projection that recognises a re-delivered event by a document of its own (a revision, a
 * sequence) writes that document after the ones it stands for (usage, score history).
 */
export interface Projection {
  /** Checkpoint name; changing it rebuilds the read model from the start. */
  readonly name: string;
  readonly collections: readonly CollectionDef<any>[];
  /** Event types it reads; others only advance its checkpoint. */
  readonly eventTypes: readonly string[];
  apply(event: RecordedEvent, ctx: ProjectionContext): Promise<void> | void;
  /**
   * Optional: applies a batch's events at once (those of `eventTypes` the projection has not
   * applied yet, in log order). It must leave exactly the documents that `apply` on each event in
   * turn leaves; it lets a projection load and write each document once per batch instead of once
   * per event and row (a rebuild's hot path: a publication touches every ticker's documents).
   */
  applyBatch?(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> | void;
}
