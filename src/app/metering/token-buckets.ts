/**
 * Request-rate limits as token buckets, one per account (all its keys share it), or per client
 * address for requests without a valid key, kept in this process: with several processes each
 * counts its own (docs/product.md).
 * A bucket holds RATE_BURST_FACTOR seconds of its rate and refills continuously; a request takes
 * one token or is refused. A dozen lines on the hot path, where a general limiter library's
 * promises and options cost more than the check itself.
 */
import type { RateDecision } from '../../web/meter.port.js';
import { RATE_BURST_FACTOR } from '../../domain/plans.js';

const UNLIMITED: RateDecision = Object.freeze({ allowed: true, perSecond: null, capacity: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 });

/** Buckets beyond this many are forgotten (all, at once): a flood of random keys cannot grow memory. */
const MAX_BUCKETS = 200_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  take(id: string, perSecond: number | null): RateDecision {
    if (perSecond === null) return UNLIMITED;
    const capacity = perSecond * RATE_BURST_FACTOR;
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
    return {
      allowed,
      perSecond,
      capacity,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((capacity - b.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / perSecond)),
    };
  }
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
