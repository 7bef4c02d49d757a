import type { EventStore, RecordedEvent } from '../core/event-store.port.js';
import { LogFollower, type FollowHealth } from '../core/log-follower.js';
import { checkpointsOf, type ReadStore } from '../core/read-store.port.js';

/**
 * What a process needs to know of the read models' progress: where they are, each batch once it
 * is in them (caches are dropped on it), and a wait for read-your-writes. The projector runner
 * gives it in a process that projects; `ReadModelFollower` in one that only reads.
 */
export interface ReadModelFeed {
  readonly position: string | null;
  readonly health: FollowHealth;
  start(): Promise<void>;
  stop(): Promise<void>;
  onBatch(listener: (events: readonly RecordedEvent[]) => void): () => void;
  /**
   * The batches handed on from now carry the data of `types` too (a follower reads only the
   * data its listeners need; a runner reads all of it). Resolves once they do.
   */
  wantData?(types: readonly string[]): Promise<void>;
  waitFor(position: string): Promise<void>;
  waitForHead(): Promise<void>;
}

export interface FollowerOptions {
  /** The projections whose checkpoints must pass a batch before it counts as in the read models. */
  projections: readonly string[];
  /**
   * The event types whose data the batches' listeners read (default: every type's). The others
   * come with `data: null` (SubscribeOptions.dataTypes): an API process needs the key events'
   * data only, not the score events', which are most of the log's bytes.
   */
  dataTypes?: readonly string[];
  /** How often the checkpoints are read while a batch waits for them (default 100 ms). */
  pollMs?: number;
  onError?(err: unknown): void;
}

/**
 * The read models' progress in a process that does not project them (`scores serve --role api`,
 * a worker without the `projections` job): it follows the log, and hands on each batch once every
 * projection's stored checkpoint has reached its last event, i.e. once another process (the
 * `projections` job of a worker) has committed it. Checkpoints are read only while a batch waits.
 */
export class ReadModelFollower implements ReadModelFeed {
  private lastPosition: string | null = null;
  private stopped = false;
  /** Follows the log from the last batch handed on; after a failure once live, again 1 s later. */
  private readonly follower: LogFollower;
  private waiters: { position: string; resolve(): void }[] = [];
  private readonly listeners = new Set<(events: readonly RecordedEvent[]) => void>();
  /** The types whose data the follower reads (undefined: all); the log follower reads it at each subscription. */
  private readonly wanted: { types: readonly string[] | undefined };

  constructor(
    private readonly events: EventStore,
    private readonly reads: ReadStore,
    private readonly options: FollowerOptions,
  ) {
    const wanted = (this.wanted = { types: options.dataTypes });
    this.follower = new LogFollower(events, {
      after: () => this.lastPosition,
      onEvents: (batch) => this.handle(batch),
      onError: (err) => this.options.onError?.(err),
      get dataTypes() {
        return wanted.types;
      },
    });
  }

  /**
   * Follows the log again from the last batch handed on, now with the data of `types` too; also
   * while it is still catching up (a worker's jobs start beside its follower's start).
   */
  async wantData(types: readonly string[]): Promise<void> {
    const now = this.wanted.types;
    if (!now || types.every((t) => now.includes(t))) return;
    this.wanted.types = [...new Set([...now, ...types])];
    await this.follower.resubscribe();
  }

  get position(): string | null {
    return this.lastPosition;
  }

  get health(): FollowHealth {
    return this.follower.health;
  }

  /** Starts at the read models' position (the least advanced checkpoint); resolves once following. */
  async start(): Promise<void> {
    this.stopped = false;
    this.lastPosition = await this.readModelsPosition();
    // Whoever waits for a position the read models already hold need not wait for a batch.
    const at = this.lastPosition;
    if (at !== null) this.waiters = this.waiters.filter((w) => (w.position <= at ? (w.resolve(), false) : true));
    await this.follower.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.follower.stop();
  }

  onBatch(listener: (events: readonly RecordedEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  waitFor(position: string): Promise<void> {
    if (this.lastPosition !== null && this.lastPosition >= position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  async waitForHead(): Promise<void> {
    const head = await this.events.headPosition();
    if (head) await this.waitFor(head);
  }

  private async handle(batch: RecordedEvent[]): Promise<void> {
    const last = batch[batch.length - 1]!.position;
    while (!this.stopped && !(await this.projected(last))) await new Promise((r) => setTimeout(r, this.options.pollMs ?? 100));
    if (this.stopped) return;
    this.lastPosition = last;
    for (const l of this.listeners) l(batch);
    this.waiters = this.waiters.filter((w) => (w.position <= last ? (w.resolve(), false) : true));
  }

  private async projected(position: string): Promise<boolean> {
    const at = await this.readModelsPosition();
    return at !== null && at >= position;
  }

  /** The least advanced projection's stored checkpoint (null: one has none yet). */
  private async readModelsPosition(): Promise<string | null> {
    const checkpoints = await checkpointsOf(this.reads, this.options.projections);
    if (checkpoints.some((c) => c === null)) return null;
    return checkpoints.reduce((a, b) => (a! < b! ? a : b), checkpoints[0] ?? null);
  }
}

/** A process following read models others project: `caughtUp` once they hold the position asked for. */
export interface Following {
  caughtUp: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Follows the read models from now on (`scores serve --role api`, `scores worker`): starts `feed`,
 * and again 1 s after a catch-up that failed, until stopped. `caughtUp` resolves once the read
 * models hold `upTo` (null: at once), never "the head", which under load moves as fast as a new
 * process could chase it.
 */
export function followReadModels(feed: ReadModelFeed, onError: (err: unknown) => void, upTo: string | null): Following {
  let stopped = false;
  const follow = (): void => {
    feed.start().catch((err: unknown) => {
      if (stopped) return;
      onError(err);
      setTimeout(follow, 1000).unref();
    });
  };
  follow();
  return {
    caughtUp: upTo ? feed.waitFor(upTo) : Promise.resolve(),
    stop: async () => {
      stopped = true;
      await feed.stop();
    },
  };
}
