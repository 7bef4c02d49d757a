const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The attempts of one live message: the wait before each attempt after the previous one failed
 * (the first goes at once). Index 0 is attempt 1. About 27.6 hours from first to last attempt.
 */
export const ATTEMPT_DELAYS_MS: readonly number[] = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
export const MAX_ATTEMPTS = ATTEMPT_DELAYS_MS.length;
/** A webhook whose attempts have all failed for this long, since the first of them, is deactivated. */
export const DEACTIVATE_AFTER_FAILING_MS = 5 * DAY;
/** The answer that deactivates a webhook at once: the receiver says the endpoint is gone for good. */
export const GONE_STATUS = 410;

export interface AttemptOutcome {
  /** The message is delivered: no more attempts. */
  ok: boolean;
  /** The webhook is to be deactivated now. */
  deactivate: boolean;
}

/**
 * Whether a receiver's answer delivers the message: a 2xx. Redirects are never followed, so a 3xx
 * fails like a 4xx or 5xx does.
 */
export const isDelivered = (status: number): boolean => status >= 200 && status < 300;

/**
 * What an attempt's result (the sender's, `src/core/webhook-sender.port.ts`) means for the webhook:
 * a 410 deactivates it at once; no answer at all (time-out, connection, TLS, refused address) is a
 * failure like any other.
 */
export function classifyAttempt(result: { ok: boolean; status_code: number | null }): AttemptOutcome {
  return { ok: result.ok, deactivate: result.status_code === GONE_STATUS };
}

/**
 * When attempt `attemptNumber` + 1 of a message is due, given that attempt `attemptNumber`
 * (1-based) failed at `failedAt`; null after the last attempt: the message is given up.
 */
export function nextAttemptAt(attemptNumber: number, failedAt: Date): Date | null {
  if (!Number.isInteger(attemptNumber) || attemptNumber < 1) throw new RangeError('attemptNumber counts from 1');
  const delay = ATTEMPT_DELAYS_MS[attemptNumber];
  return delay === undefined ? null : new Date(failedAt.getTime() + delay);
}

/**
 * Whether a webhook failing since `firstFailureAt` (the first failure after its last success;
 * null when its last attempt succeeded) has failed long enough to be deactivated at `now`.
 * Failures are counted by time, not number: two failed messages five days apart are enough.
 */
export function shouldDeactivate(firstFailureAt: Date | null, now: Date): boolean {
  return firstFailureAt !== null && now.getTime() - firstFailureAt.getTime() >= DEACTIVATE_AFTER_FAILING_MS;
}
