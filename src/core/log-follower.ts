/**
 * Follows the whole log from a position, and keeps following it: what the projector runner and
 * a process that only reads the read models (src/app/read-model-follower.ts) both do. `start`
 * resolves once caught up with the log and rejects when catching up fails; a failure once live is
 * reported and the log is followed again from `after()` after `pauseMs(failures in a row)`.
 */
import type { EventStore, RecordedEvent, Subscription } from './event-store.port.js';

export interface LogFollowerOptions {
  /** Where to follow from, asked at each start and each retry (null: the beginning). */
  after(): string | null;
  onEvents(batch: RecordedEvent[]): Promise<void>;
  onError?(err: unknown): void;
  maxBatch?: number;
  /** See SubscribeOptions.dataTypes. */
  dataTypes?: readonly string[];
  /** The pause before following again after the n-th failure in a row (0-based; default 1 s). */
  pauseMs?(failures: number): number;
}

export interface FollowHealth {
  state: 'live' | 'catching_up' | 'retrying';
  error: string | null;
}

export class LogFollower {
  /** What the subscription in place settles: the start's promise (a retry's settles nothing). */
  private settle: { caughtUp: () => void; failed: (err: unknown) => void } | null = null;
  private subscription: Subscription | null = null;
  /** Caught up with the log and following it. */
  private caughtUp = false;
  /** The pending re-subscription after a failure, and how many failures in a row. */
  private retry: NodeJS.Timeout | null = null;
  private failures = 0;
  private failure: string | null = null;

  constructor(
    private readonly events: EventStore,
    private readonly options: LogFollowerOptions,
  ) {}

  get live(): boolean {
    return this.caughtUp;
  }

  /** `live` (following the log), `catching_up`, or `retrying` after a failure (with its message). */
  get health(): FollowHealth {
    if (this.retry) return { state: 'retrying', error: this.failure };
    return { state: this.caughtUp ? 'live' : 'catching_up', error: this.failure };
  }

  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => this.follow(resolve, reject));
  }

  /** Resolves once the subscription has stopped and no batch is being handled. */
  async stop(): Promise<void> {
    this.caughtUp = false;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const subscription = this.subscription;
    this.subscription = null;
    this.settle = null;
    await subscription?.stop();
  }

  /**
   * Follows the log again from `after()` with the options as they are now (a `dataTypes` getter's
   * new answer): the subscription in place stops (its batch in hand finishes) and a new one starts,
   * settling a start still catching up as the old one would have. Nothing while none is in place.
   */
  async resubscribe(): Promise<void> {
    const [subscription, settle] = [this.subscription, this.settle];
    if (!subscription || !settle) return;
    this.subscription = null;
    await subscription.stop();
    // Stopped, failed or resubscribed meanwhile: that one decides what follows.
    if (this.subscription === null && this.retry === null && this.settle === settle) this.follow(settle.caughtUp, settle.failed);
  }

  private follow(caughtUp: () => void, failed: (err: unknown) => void): void {
    this.settle = { caughtUp, failed };
    this.subscription = this.events.subscribeToAll({
      after: this.options.after(),
      maxBatch: this.options.maxBatch,
      dataTypes: this.options.dataTypes,
      onEvents: (batch) => this.options.onEvents(batch),
      onCaughtUp: () => {
        this.caughtUp = true;
        this.failures = 0;
        this.failure = null;
        caughtUp();
      },
      onError: (err) => {
        this.options.onError?.(err);
        const wasLive = this.caughtUp;
        this.caughtUp = false;
        this.subscription = null;
        this.failure = err instanceof Error ? err.message : String(err);
        if (!wasLive) return failed(err);
        const pause = this.options.pauseMs?.(this.failures) ?? 1000;
        this.failures++;
        this.retry = setTimeout(() => {
          this.retry = null;
          this.follow(() => undefined, () => undefined);
        }, pause);
      },
    });
  }
}
