import { ConcurrencyError } from './errors.js';
import type { Clock } from './clock.js';
import type { EventStore, RecordedEvent } from './event-store.port.js';
import { checkpointsIn, type CollectionDef, type CommitBatch, type Filter, type FindOptions, type ReadSnapshot, type ReadStore } from './read-store.port.js';
import { generationsDecider, type GenerationCommand, type GenerationEvent, type GenerationsState } from './read-model-generations.decider.js';

/**
 * Generations of the read models in one read store (docs/scaling.md, "Replay beside a running
 * fleet"): generation 0 keeps the plain names, generation n prefixes collections with `g<n>_` and
 * checkpoints with `g<n>/`, so a replay writes a whole new set beside the live one.
 */
export const collectionOf = (name: string, generation: number): string => (generation === 0 ? name : `g${generation}_${name}`);
export const checkpointOf = (projector: string, generation: number): string => (generation === 0 ? projector : `g${generation}/${projector}`);

/** The generations stream, folded; decisions appended at the revision they were taken on (retried on a race). */
export class GenerationLog {
  private state = generationsDecider.initialState();
  private revision = -1;
  private reading: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly events: EventStore,
    private readonly clock: Clock,
    /** generationsStreamOf(the read store). */
    private readonly streamId: string,
  ) {}

  /** The state as the log has it now (reads only the events since the last call). */
  async current(): Promise<GenerationsState> {
    // One read at a time: two would fold the same events twice.
    const read = this.reading.then(async () => {
      const fresh = await this.events.readStream(this.streamId, { fromRevision: this.revision + 1 });
      for (const e of fresh) this.fold(e);
      return this.state;
    });
    this.reading = read.catch(() => undefined);
    return read;
  }

  /** Decides `command` on the current state and appends its events; a racing writer makes it decide again. */
  async decide(command: GenerationCommand): Promise<GenerationsState> {
    for (;;) {
      const state = await this.current();
      const events = generationsDecider.decide(state, command, this.clock.now());
      if (events.length === 0) return state;
      try {
        await this.events.append(this.streamId, events, this.revision < 0 ? 'no_stream' : this.revision);
        return await this.current();
      } catch (err) {
        if (!(err instanceof ConcurrencyError)) throw err;
      }
    }
  }

  private fold(event: RecordedEvent): void {
    this.state = generationsDecider.evolve(this.state, event as RecordedEvent & GenerationEvent);
    this.revision = event.revision;
  }
}

/** How a view names things: the generation of a collection and of a projector's checkpoint. */
interface Naming {
  collection(name: string): string;
  checkpoint(projector: string): string;
}

/**
 * A read store seen through a naming: every collection and checkpoint is renamed on the way in,
 * so the code above it (projections, queries) never knows which generation it works on.
 */
class RenamedReadStore implements ReadStore {
  constructor(
    private readonly base: ReadStore,
    private readonly naming: Naming,
  ) {}

  private def<T>(def: CollectionDef<T>): CollectionDef<T> {
    const name = this.naming.collection(def.name);
    return name === def.name ? def : { ...def, name };
  }

  register(defs: readonly CollectionDef<any>[]): Promise<void> {
    return this.base.register(defs.map((d) => this.def(d)));
  }
  get<T>(def: CollectionDef<T>, id: string) {
    return this.base.get(this.def(def), id);
  }
  getMany<T>(def: CollectionDef<T>, ids: readonly string[]) {
    return this.base.getMany(this.def(def), ids);
  }
  find<T>(def: CollectionDef<T>, filter: Filter<T>, options?: FindOptions<T>) {
    return this.base.find(this.def(def), filter, options);
  }
  count<T>(def: CollectionDef<T>, filter: Filter<T>) {
    return this.base.count(this.def(def), filter);
  }
  scan<T>(def: CollectionDef<T>, batchSize?: number) {
    return this.base.scan(this.def(def), batchSize);
  }
  async snapshot(): Promise<ReadSnapshot> {
    const inner = await this.base.snapshot();
    return {
      consistent: inner.consistent,
      scan: (def, batchSize) => inner.scan(this.def(def), batchSize),
      checkpoint: (projector) => inner.checkpoint(this.naming.checkpoint(projector)),
      close: () => inner.close(),
    };
  }
  commit(batch: CommitBatch): Promise<void> {
    return this.base.commit({
      writes: batch.writes.map((w) => ({ ...w, collection: this.naming.collection(w.collection) })),
      checkpoints: Object.fromEntries(Object.entries(batch.checkpoints).map(([p, pos]) => [this.naming.checkpoint(p), pos])),
    });
  }
  checkpoint(projector: string) {
    return this.base.checkpoint(this.naming.checkpoint(projector));
  }
  checkpoints(projectors: readonly string[]): Promise<Map<string, string>> {
    return checkpointsIn(this.base, projectors.map((p) => this.naming.checkpoint(p)), projectors);
  }
  reset(collections: readonly string[], projectors: readonly string[]) {
    return this.base.reset(
      collections.map((c) => this.naming.collection(c)),
      projectors.map((p) => this.naming.checkpoint(p)),
    );
  }
  /** The base store is the caller's: closing a view closes nothing. */
  async close(): Promise<void> {}
}

/** The read models of one generation (what a projector of that generation writes). */
export function generationView(base: ReadStore, generation: number): ReadStore {
  return new RenamedReadStore(base, { collection: (c) => collectionOf(c, generation), checkpoint: (p) => checkpointOf(p, generation) });
}

/**
 * The read models readers should use: each collection and checkpoint in its read model's live
 * generation, as the generations stream says. `refresh` reads the stream again (`follow` does it
 * every `pollMs`); listeners hear of each switch once this view reads the new generation.
 */
export class LiveReadModels {
  private live = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<() => void>();
  readonly reads: ReadStore;

  constructor(
    base: ReadStore,
    private readonly log: GenerationLog,
  ) {
    const gen = (name: string) => this.live.get(name) ?? 0;
    this.reads = new RenamedReadStore(base, { collection: (c) => collectionOf(c, gen(c)), checkpoint: (p) => checkpointOf(p, gen(`/${p}`)) });
  }

  async refresh(): Promise<void> {
    const state = await this.log.current();
    const live = new Map<string, number>();
    for (const u of Object.values(state.units)) {
      for (const c of u.collections) live.set(c, u.live);
      for (const p of u.projectors) live.set(`/${p}`, u.live);
    }
    const switched = [...live].some(([k, g]) => (this.live.get(k) ?? 0) !== g);
    this.live = live;
    if (switched) for (const l of this.listeners) l();
  }

  /** Reads the generations now and then every `pollMs` (errors go to `onError`; the last mapping stays). */
  async follow(pollMs: number, onError: (err: unknown) => void): Promise<void> {
    await this.refresh();
    const tick = () => {
      this.timer = setTimeout(() => void this.refresh().catch(onError).finally(() => this.timer && tick()), pollMs);
      this.timer.unref();
    };
    tick();
  }

  onSwitch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
