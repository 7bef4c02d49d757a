/**
 * A store of token buckets several processes share (src/app/metering/shared-buckets.ts): one take
 * from a bucket, atomically, wherever it is asked. Adapter: infra/postgresql/rate-limits.ts.
 */

/** One take: whether a token was there, and the tokens left after it (fractional). */
export interface BucketTake {
  allowed: boolean;
  tokens: number;
}

export interface TokenBucketStore {
  /**
   * Refills bucket `id` (at most `capacity` tokens, `perSecond` a second since its last take; a
   * new bucket starts full), then takes one token if a whole one is there.
   */
  take(id: string, perSecond: number, capacity: number): Promise<BucketTake>;
  close(): Promise<void>;
}
