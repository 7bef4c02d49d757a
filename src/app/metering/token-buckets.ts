/**
 * Request-rate limits as token buckets, one per account (all its keys share it), or per client
 * address for requests without a valid key, kept in this process. Shared by several processes
 * when a shared store is configured (shared-buckets.ts, docs/scaling.md).
 * A bucket holds RATE_BURST_FACTOR seconds of its rate and refills continuously; a request takes
 * one token or is refused. A dozen lines on the hot path, where a general limiter library's
 * promises and options cost more than the check itself.
 */
import type { RateDecision } from '../../web/meter.port.js';
import type { BucketTake } from '../../core/rate-limit-store.port.js';
import { RATE_BURST_FACTOR } from '../../domain/plans.js';

export const UNLIMITED: RateDecision = Object.freeze({ allowed: true, perSecond: null, capacity: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 });

/** Buckets beyond this many are forgotten (all, at once): a flood of random keys cannot grow memory. */
const MAX_BUCKETS = 200_000;

/** An account's request rate: a token bucket (`take`), in this process or shared (shared-buckets.ts). */
export interface RateLimiter {
  take(id: string, perSecond: number | null): RateDecision | Promise<RateDecision>;
}

/** The bucket's size for a rate: RATE_BURST_FACTOR seconds of it. */
export const capacityOf = (perSecond: number) => perSecond * RATE_BURST_FACTOR;

export class TokenBuckets implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  take(id: string, perSecond: number | null): RateDecision {
    if (perSecond === null) return UNLIMITED;
    const capacity = capacityOf(perSecond);
    const t = this.now();
    let b = this.buckets.get(id);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
      b = { tokens: capacity, at: t };
      this.buckets.set(id, b);
    } else {
      b.tokens = Math.min(capacity, b.tokens + ((t - b.at) / 1000) * perSecond);
      b.at = t;
    }
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    return rateDecision(perSecond, capacity, { allowed, tokens: b.tokens });
  }
}

/** What one take from a bucket of `capacity` refilled at `perSecond` decided, as the headers tell it. */
export function rateDecision(perSecond: number, capacity: number, take: BucketTake): RateDecision {
  const { allowed, tokens } = take;
  return {
    allowed,
    perSecond,
    capacity,
    remaining: Math.floor(tokens),
    resetSeconds: Math.ceil((capacity - tokens) / perSecond),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / perSecond)),
  };
}

/**
 * The IETF `RateLimit-Policy` and `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers): the
 * quota is the burst, its window the seconds a full bucket takes to refill; `r` what is left, `t`
 * the seconds until it is full. Null for an unlimited account (no header).
 */
export function rateLimitHeaders(d: RateDecision): { policy: string; state: string } | null {
  if (d.perSecond === null) return null;
  const window = d.capacity / d.perSecond;
  return { policy: `"per-account";q=${d.capacity};w=${window}`, state: `"per-account";r=${d.remaining};t=${d.resetSeconds}` };
}
