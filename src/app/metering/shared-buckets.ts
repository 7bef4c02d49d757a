/**
 * The accounts' token buckets in a store every API replica shares (RATE_LIMIT_STORE=postgres):
 * the same buckets, decisions and headers as in-process (token-buckets.ts), one atomic take in the
 * store per request.
 *
 * When the store fails or does not answer within `timeoutMs`, the request is decided by this
 * process's own buckets instead, and the store is left alone for `retryMs` before it is asked
 * again: an outage neither lets calls through unlimited nor takes the API down, and while it lasts
 * each replica limits on its own (a key may get up to one rate per replica). `onFallback` is told
 * once when the outage starts and once (with null) when the store answers again.
 */
import type { TokenBucketStore } from '../../core/rate-limit-store.port.js';
import type { RateDecision } from '../../web/meter.port.js';
import { TokenBuckets, UNLIMITED, capacityOf, rateDecision, type RateLimiter } from './token-buckets.js';

/** How long a take waits for the store, unless told (RATE_LIMIT_STORE_TIMEOUT_MS). */
export const STORE_TIMEOUT_MS = 250;

export interface SharedBucketsOptions {
  /** How long a take may wait for the store before this process decides alone (default STORE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How long the store is left alone after a failure (default 1 s). */
  retryMs?: number;
  /** The outage's start (its error) and end (null). */
  onFallback?(err: unknown): void;
  now?: () => number;
}

export class SharedTokenBuckets implements RateLimiter {
  private readonly local: TokenBuckets;
  /** While falling back: when to ask the store again; null while the store answers. */
  private retryAt: number | null = null;
  private readonly now: () => number;

  constructor(
    private readonly store: TokenBucketStore,
    private readonly options: SharedBucketsOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.local = new TokenBuckets(this.now);
  }

  async take(id: string, perSecond: number | null): Promise<RateDecision> {
    if (perSecond === null) return UNLIMITED;
    if (this.retryAt !== null && this.now() < this.retryAt) return this.local.take(id, perSecond);
    const capacity = capacityOf(perSecond);
    try {
      const take = await withTimeout(this.store.take(id, perSecond, capacity), this.options.timeoutMs ?? STORE_TIMEOUT_MS);
      if (this.retryAt !== null) this.options.onFallback?.(null);
      this.retryAt = null;
      return rateDecision(perSecond, capacity, take);
    } catch (err) {
      if (this.retryAt === null) this.options.onFallback?.(err);
      this.retryAt = this.now() + (this.options.retryMs ?? 1000);
      return this.local.take(id, perSecond);
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the rate-limit store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
