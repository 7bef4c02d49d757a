import type { EventStore, RecordedEvent } from './event-store.port.js';
import { LogFollower, type FollowHealth } from './log-follower.js';
import type { CollectionDef, ReadStore, Write } from './read-store.port.js';
import type { Projection, ProjectionContext } from './projection.js';

export interface RunnerOptions {
  batchSize?: number;
  /**
   * Asks the log for the data of the projections' event types only (a read model's own projector,
   * whose batches no one else reads): on a server, a unit skips the transfer and decoding of the
   * rest of the log. Off where batch listeners may look at any event's data.
   */
  onlyOwnData?: boolean;
  onError?(err: unknown): void;
  /** Called after each committed batch with the number of events and the last position. */
  onProgress?(events: number, position: string): void;
  /**
   * Once caught up, after a batch smaller than `batchSize`, how long to let events gather
   * before reading the next batch (default 50 ms). Under a burst of metered calls every group
   * commit would otherwise be its own read-model transaction; gathered, the per-batch cost
   * (checkpoints, one commit, document rewrites) is paid once per many events. A `waitFor` cuts
   * the wait short, so read-your-writes callers never pay it. 0 turns it off.
   */
  liveCoalesceMs?: number;
}

/**
 * Runs projections over the log: catch-up from each projection's checkpoint, then live.
 * Each batch of events is applied to every projection in memory and committed in one ReadStore
 * commit together with the checkpoints, so a crash never applies an event twice or skips one.
 */
export class ProjectorRunner {
  private checkpoints = new Map<string, string | null>();
  private lastPosition: string | null = null;
  private waiters: { position: string; resolve(): void }[] = [];
  private readonly progressListeners = new Set<(position: string) => void>();
  private readonly appliedListeners = new Set<(events: number) => void>();
  private readonly batchListeners = new Set<(events: readonly RecordedEvent[]) => void>();
  /** Ends the current live coalescing wait early (null when not waiting). */
  private endGathering: (() => void) | null = null;
  /** Follows the log; after a failure once live, again after a pause doubling from 1 s to 60 s. */
  private readonly follower: LogFollower;
  /**
   * The documents of the last committed batch, as the projections left them (null after a
   * failure, a stop or a reset): the next batch reads them from here instead of parsing them
   * again. Only the last batch's, so memory stays bounded by one batch.
   */
  private recent: PendingWrites | null = null;
  /** Each projection's event types, as a set. */
  private readonly eventTypes: ReadonlyMap<Projection, ReadonlySet<string>>;

  constructor(
    private readonly events: EventStore,
    private readonly store: ReadStore,
    private readonly projections: readonly Projection[],
    private readonly options: RunnerOptions = {},
  ) {
    this.eventTypes = new Map(projections.map((p) => [p, new Set(p.eventTypes)]));
    this.follower = new LogFollower(events, {
      after: () => this.resumePosition(),
      // Large batches during catch-up: each month bucket is rewritten once per batch.
      maxBatch: this.batchSize,
      // Only the projections' own events are read with their data (an adapter may leave the rest out).
      dataTypes: this.options.onlyOwnData ? [...new Set(this.projections.flatMap((p) => p.eventTypes))] : undefined,
      onEvents: (batch) => this.handle(batch),
      onError: (err) => this.options.onError?.(err),
      pauseMs: (failures) => Math.min(1000 * 2 ** failures, 60_000),
    });
  }

  private get batchSize(): number {
    return this.options.batchSize ?? 1000;
  }

  get collections(): CollectionDef<any>[] {
    return this.projections.flatMap((p) => p.collections);
  }

  /**
   * Starts following the log; resolves once the read models have caught up with it (rejects if
   * catching up fails). A failure once live does not stop the read models for good: it is
   * reported through `onError` and the runner follows the log again from its last committed
   * checkpoint after a pause that doubles with each consecutive failure (1 s up to 60 s).
   */
  async start(): Promise<void> {
    await this.begin(false);
  }

  /** `start`; `emptied`: every collection was just reset (a replay), none needs it again. */
  private async begin(emptied: boolean): Promise<void> {
    this.recent = null;
    await this.store.register(this.collections);
    for (const p of this.projections) this.checkpoints.set(p.name, await this.store.checkpoint(p.name));
    // A projection without a checkpoint (new, or renamed because its documents changed shape)
    // starts from empty collections: what they hold is not its own.
    const fresh = this.projections.filter((p) => this.checkpoints.get(p.name) === null);
    if (fresh.length && !emptied) await this.store.reset(fresh.flatMap((p) => p.collections.map((c) => c.name)), []);
    this.lastPosition = this.resumePosition();
    await this.follower.start();
  }

  /** Where to read from: the least advanced projection's checkpoint (null = the beginning). */
  private resumePosition(): string | null {
    const values = [...this.checkpoints.values()];
    return values.some((v) => v === null) ? null : values.reduce((a, b) => (a! < b! ? a : b), values[0] ?? null);
  }

  /** `live` (following the log), `catching_up`, or `retrying` after a failure (with its message). */
  get health(): FollowHealth {
    return this.follower.health;
  }

  /** Calls `listener` after every committed batch; returns the function that removes it. */
  onProgressChange(listener: (position: string) => void): () => void {
    this.progressListeners.add(listener);
    return () => this.progressListeners.delete(listener);
  }

  /** Calls `listener` with the number of events of every committed batch. */
  onEventsApplied(listener: (events: number) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  /** Calls `listener` with the events of every batch once its read-model writes are committed. */
  onBatch(listener: (events: readonly RecordedEvent[]) => void): () => void {
    this.batchListeners.add(listener);
    return () => this.batchListeners.delete(listener);
  }

  /** Position of the last event in the read models (null before the first). */
  get position(): string | null {
    return this.lastPosition;
  }

  /** Resolves once every event up to `position` is in the read models. */
  waitFor(position: string): Promise<void> {
    if (this.lastPosition !== null && this.lastPosition >= position) return Promise.resolve();
    this.endGathering?.();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  /** Resolves once the read models include the whole log as it is now. */
  async waitForHead(): Promise<void> {
    const head = await this.events.headPosition();
    if (head) await this.waitFor(head);
  }

  async stop(): Promise<void> {
    this.endGathering?.();
    await this.follower.stop();
    // Whoever stops the runner may change the read models (a replay resets them).
    this.recent = null;
  }

  /** Drops every read model and its checkpoint, then rebuilds them from the whole log. */
  async replay(): Promise<void> {
    await this.stop();
    await this.store.register(this.collections);
    await this.store.reset(
      this.collections.map((c) => c.name),
      this.projections.map((p) => p.name),
    );
    this.checkpoints.clear();
    await this.begin(true);
  }

  private async handle(batch: RecordedEvent[]): Promise<void> {
    const writes = new PendingWrites();
    const checkpoints: Record<string, string> = {};
    const last = batch[batch.length - 1]!.position;
    const ctx = this.context(writes, this.recent);
    // The documents of the last batch are read from `recent` only until this batch is committed.
    this.recent = null;
    for (const projection of this.projections) {
      const done = this.checkpoints.get(projection.name) ?? null;
      const types = this.eventTypes.get(projection)!;
      const events = batch.filter((e) => types.has(e.type) && (done === null || e.position > done));
      if (projection.applyBatch) {
        if (events.length) await projection.applyBatch(events, ctx);
      } else {
        for (const event of events) await projection.apply(event, ctx);
      }
      if (done === null || last > done) checkpoints[projection.name] = last;
    }
    await this.store.commit({ writes: writes.all(), checkpoints });
    // The next batch reads these documents from here: they are what the store now holds. (After a
    // failure, `recent` stays null: the documents this batch changed are in no commit.)
    this.recent = writes;
    for (const [name, position] of Object.entries(checkpoints)) this.checkpoints.set(name, position);
    this.lastPosition = last;
    this.options.onProgress?.(batch.length, last);
    for (const l of this.progressListeners) l(last);
    for (const l of this.appliedListeners) l(batch.length);
    for (const l of this.batchListeners) l(batch);
    this.waiters = this.waiters.filter((w) => {
      if (w.position <= last) {
        w.resolve();
        return false;
      }
      return true;
    });
    if (this.follower.live && batch.length < this.batchSize && this.waiters.length === 0) await this.gather();
  }

  /** The live coalescing wait (see `liveCoalesceMs`). */
  private gather(): Promise<void> {
    const ms = this.options.liveCoalesceMs ?? 50;
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => end(), ms);
      const end = () => {
        clearTimeout(timer);
        this.endGathering = null;
        resolve();
      };
      this.endGathering = end;
    });
  }

  /**
   * Reads see the batch's own writes first, then the documents the previous batch wrote (`recent`),
   * then the store. A document is taken out of `recent` when read: a projection may change what it
   * reads without writing it back, and the next read must then see the stored document, as it
   * would without `recent`.
   */
  private context(writes: PendingWrites, recent: PendingWrites | null): ProjectionContext {
    const store = this.store;
    // What the store gave in this batch, kept for the batch: a rebuild asks for the same documents
    // several times (the previous day's scores, a day being projected that does not exist yet), and
    // on a server each ask is a round trip. Safe for the batch: this runner is the only writer of
    // its read models, a write of the document is found in `writes` first, and a projection that
    // changes what it read without writing it back gets a fresh copy on its next read.
    const fetched = new Map<string, unknown>();
    const key = (collection: string, id: string) => `${collection}\u0000${id}`;
    const keep = (k: string, doc: unknown) => fetched.set(k, doc === null ? null : structuredClone(doc));
    const kept = (k: string): unknown => {
      const doc = fetched.get(k);
      return doc === undefined || doc === null ? doc : structuredClone(doc);
    };
    return {
      async get<T>(def: CollectionDef<T>, id: string): Promise<T | null> {
        // Reads never create a collection's entry: the order of `writes.all()` is that of first writes.
        const pending = writes.collection(def.name)?.get(id);
        if (pending !== undefined) return pending as T | null;
        const k = key(def.name, id);
        const last = recent?.take(def.name, id);
        if (last !== undefined) {
          keep(k, last);
          return last as T | null;
        }
        if (fetched.has(k)) return kept(k) as T | null;
        const doc = await store.get(def, id);
        keep(k, doc);
        return doc;
      },
      async getMany<T>(def: CollectionDef<T>, ids: readonly string[]): Promise<Map<string, T>> {
        const out = new Map<string, T>();
        const pending = writes.collection(def.name);
        const previous = recent?.collection(def.name);
        let missing: string[] | null = null;
        for (const id of ids) {
          let doc = pending?.get(id);
          if (doc === undefined && previous) {
            doc = previous.get(id);
            if (doc !== undefined) {
              previous.delete(id);
              keep(key(def.name, id), doc);
            }
          }
          if (doc === undefined && fetched.has(key(def.name, id))) doc = kept(key(def.name, id));
          if (doc === undefined) (missing ??= []).push(id);
          else if (doc !== null) out.set(id, doc as T);
        }
        if (!missing) return out;
        const found = await store.getMany(def, missing);
        for (const id of missing) {
          const doc = found.get(id);
          keep(key(def.name, id), doc ?? null);
          if (doc !== undefined) out.set(id, doc);
        }
        return out;
      },
      upsert<T>(def: CollectionDef<T>, doc: T): void {
        writes.of(def.name).set(def.key(doc), doc);
      },
      delete<T>(def: CollectionDef<T>, id: string): void {
        writes.of(def.name).set(id, null);
      },
    };
  }
}

/**
 * The last write of each document in a batch, per collection (only the last one matters): the
 * document, or null for a delete. `all()` lists collections in the order of their first write: a
 * store without transactions applies them in that order (see `Projection`).
 */
class PendingWrites {
  private readonly byCollection = new Map<string, Map<string, unknown>>();

  of(collection: string): Map<string, unknown> {
    let m = this.byCollection.get(collection);
    if (!m) this.byCollection.set(collection, (m = new Map<string, unknown>()));
    return m;
  }

  collection(name: string): Map<string, unknown> | undefined {
    return this.byCollection.get(name);
  }

  /** The document written (null: deleted), removed from here; undefined when not written. */
  take(collection: string, id: string): unknown {
    const m = this.byCollection.get(collection);
    const doc = m?.get(id);
    if (doc !== undefined) m!.delete(id);
    return doc;
  }

  all(): Write[] {
    const out: Write[] = [];
    for (const [collection, docs] of this.byCollection) {
      for (const [id, doc] of docs) out.push(doc === null ? { op: 'delete', collection, id } : { op: 'upsert', collection, id, doc });
    }
    return out;
  }
}
