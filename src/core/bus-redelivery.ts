import { LeaseLostError } from './lease.js';

/**
 * How an EventBus adapter hands a message again after its handler failed: the same member runs
 * it again after a pause (0.1 s doubling to 5 s) until it succeeds, or until the member stops; the
 * message is never skipped. Handlers route what can never succeed (a malformed message) to their
 * own dead letters, so a failure here is one that can pass: a store that did not answer. Except a
 * lost lease: that job is stopping, and the group's next member gets the message.
 */
const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 5_000;

/** The handler gave the message up because its member stopped: the adapter must not mark it handled. */
export class MemberStoppedError extends Error {
  constructor() {
    super('the subscription stopped before its handler succeeded; the message is handed again to the group');
    this.name = 'MemberStoppedError';
  }
}

export interface RedeliveryHooks {
  /** True once the member stops (or the bus closes): the retries end. */
  stopped(): boolean;
  /** Each failure, before the pause. */
  report(err: unknown): void;
  /** Runs during each pause (a Kafka member's heartbeat, so a long retry keeps its partitions). */
  pausing?(): Promise<void>;
}

/**
 * Runs `handle` until it succeeds; throws MemberStoppedError when the member stops first. After a
 * LeaseLostError `handle` is not run again: it would repeat what it did before its fenced write was
 * refused (an HTTP request, an email) with no way to record it. The message waits, heartbeating,
 * for the member to stop (the job's runner stops the job at once, `lease.onLost`).
 */
export async function handleUntilDone(handle: () => Promise<void>, hooks: RedeliveryHooks): Promise<void> {
  let lost = false;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    if (!lost) {
      try {
        await handle();
        return;
      } catch (err) {
        hooks.report(err);
        lost = err instanceof LeaseLostError;
      }
    }
    await pauseUnlessStopped(pause, hooks);
  }
}

/** Waits `ms`, or throws MemberStoppedError as soon as the member stops. */
async function pauseUnlessStopped(ms: number, hooks: RedeliveryHooks): Promise<void> {
  const until = Date.now() + ms;
  while (!hooks.stopped() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, Math.min(50, until - Date.now())));
  if (hooks.stopped()) throw new MemberStoppedError();
  await hooks.pausing?.();
}
