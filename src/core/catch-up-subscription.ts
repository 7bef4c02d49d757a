import type { RecordedEvent, SubscribeOptions, Subscription } from './event-store.port.js';

/**
 * Who waits for a log to grow, and how often it has grown. A log adapter calls `wakeAll` when it
 * commits (or hears that another process did); its catch-up subscriptions wait here between reads.
 */
export class LogWakeups {
  private readonly waiting = new Set<() => void>();
  private grown = 0;

  /** How many times the log has grown: a reader compares it before and after a read. */
  get count(): number {
    return this.grown;
  }

  wakeAll(): void {
    this.grown++;
    for (const wake of [...this.waiting]) wake();
  }

  /** Resolves at the next `wakeAll`, after `ms`, or when `cancel` is called, whichever comes first. */
  wait(ms: number): { done: Promise<void>; cancel: () => void } {
    let cancel: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.waiting.delete(finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.waiting.add(finish);
      cancel = finish;
    });
    return { done, cancel };
  }
}

/** What a log adapter gives `subscribeCatchUp`. */
export interface CatchUpSource {
  /** Up to `max` events after the position (`null`: from the start), in log order. */
  read(after: string | null, max: number): Promise<RecordedEvent[]>;
  /** The last position now (`null`: an empty log), for `onCaughtUp`. */
  head(): Promise<string | null>;
  wakeups: LogWakeups;
  /** How long to wait for a wake-up before reading again anyway (a lost notification). */
  pollMs: number;
  /** A read failing after the log closed ends the subscription quietly. */
  isClosed(): boolean;
  /** Before the first read and before each wait (the PostgreSQL log listens again if it must). */
  prepare?(): Promise<void> | void;
  /** Read the next full batch while the handler runs on this one (worth it when reads are I/O). */
  readAhead?: boolean;
  /**
   * While following the log's tail, the least time from one read's start to the next (default 0).
   * Under load a log grows during every read, and each subscription would read again at once: a
   * round trip per commit per subscription. A few milliseconds here let one read take many
   * commits; an idle log is read as soon as it grows.
   */
  minIntervalMs?: number;
}

/** Resolves after `ms`, or at once when the returned cancel is called. */
function pause(ms: number): { done: Promise<void>; cancel: () => void } {
  let cancel: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    cancel = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, cancel };
}

/**
 * A catch-up subscription over a log that numbers its events: read a batch after the last
 * position, hand it over, and when a read comes back short, wait for the log to grow (or the poll
 * interval) unless it grew during the read. One loop for the embedded and the PostgreSQL logs.
 */
export function subscribeCatchUp(source: CatchUpSource, options: SubscribeOptions): Subscription {
  let stopped = false;
  let cancelWait: (() => void) | null = null;
  const max = options.maxBatch ?? 200;

  const loop = async () => {
    await source.prepare?.();
    let after = options.after ?? null;
    let caughtUp = false;
    const target = (await source.head()) ?? '';
    let next: Promise<RecordedEvent[]> | null = null;
    while (!stopped) {
      const grownBefore = source.wakeups.count;
      const readAt = performance.now();
      let batch: RecordedEvent[];
      try {
        batch = await (next ?? source.read(after, max));
      } catch (err) {
        if (stopped || source.isClosed()) return;
        throw err;
      }
      next = null;
      if (stopped) return;
      if (batch.length > 0) {
        const last = batch[batch.length - 1]!.position;
        if (source.readAhead && batch.length === max) {
          next = source.read(last, max);
          next.catch(() => undefined);
        }
        await options.onEvents(batch);
        after = last;
      }
      if (!caughtUp && (batch.length < max || (after ?? '') >= target)) {
        caughtUp = true;
        options.onCaughtUp?.();
      }
      // Wait only if nothing was committed since the read began (its wake-up found no waiter).
      if (batch.length < max && !stopped && source.wakeups.count === grownBefore) {
        await source.prepare?.();
        const wait = source.wakeups.wait(source.pollMs);
        cancelWait = wait.cancel;
        await wait.done;
        cancelWait = null;
      }
      const spare = (source.minIntervalMs ?? 0) - (performance.now() - readAt);
      if (batch.length < max && spare > 0 && !stopped) {
        const wait = pause(spare);
        cancelWait = wait.cancel;
        await wait.done;
        cancelWait = null;
      }
    }
  };
  const running = loop().catch((err: unknown) => {
    stopped = true;
    options.onError?.(err);
  });
  return {
    stop: async () => {
      stopped = true;
      cancelWait?.();
      await running;
    },
  };
}
