import { expect } from 'chai';
import type { BucketTake, TokenBucketStore } from '../../src/core/rate-limit-store.port.js';
import { SharedTokenBuckets } from '../../src/app/metering/shared-buckets.js';
import { TokenBuckets, rateLimitHeaders } from '../../src/app/metering/token-buckets.js';

/** A store over one in-memory TokenBuckets (what the PostgreSQL row does), or one that fails or never answers. */
class FakeStore implements TokenBucketStore {
  mode: 'answer' | 'fail' | 'hang' = 'answer';
  takes = 0;
  private readonly buckets: TokenBuckets;
  constructor(now: () => number) {
    this.buckets = new TokenBuckets(now);
  }
  take(id: string, perSecond: number): Promise<BucketTake> {
    this.takes++;
    if (this.mode === 'fail') return Promise.reject(new Error('connection refused'));
    if (this.mode === 'hang') return new Promise<BucketTake>(() => undefined);
    const d = this.buckets.take(id, perSecond);
    // What the store keeps: the tokens left, fractional (the decision rounds them down).
    return Promise.resolve({ allowed: d.allowed, tokens: d.remaining });
  }
  close = () => Promise.resolve();
}

describe('Shared token buckets (RATE_LIMIT_STORE=postgres) and their fallback', () => {
  let t = 0;
  const now = () => t;
  const outages: unknown[] = [];
  const shared = (store: TokenBucketStore) => new SharedTokenBuckets(store, { now, timeoutMs: 20, retryMs: 1000, onFallback: (err) => outages.push(err) });
  beforeEach(() => {
    t = 0;
    outages.length = 0;
  });

  it('decides as the in-process buckets do, with the same headers, when the store answers', async () => {
    const store = new FakeStore(now);
    const limiter = shared(store);
    const local = new TokenBuckets(now);
    for (let i = 0; i < 6; i++) {
      const [a, b] = [await limiter.take('acct_1', 2), local.take('acct_1', 2)];
      expect(a).to.deep.equal(b);
      expect(rateLimitHeaders(a)).to.deep.equal(rateLimitHeaders(b));
    }
    expect(store.takes).to.equal(6);
    expect(await limiter.take('acct_1', null)).to.include({ allowed: true, perSecond: null });
    expect(outages).to.deep.equal([]);
  });

  it("limits with this process's own buckets when the store fails: never unlimited, never an error", async () => {
    const store = new FakeStore(now);
    store.mode = 'fail';
    const limiter = shared(store);
    const decisions = [];
    for (let i = 0; i < 6; i++) decisions.push(await limiter.take('acct_1', 2));
    // The bucket of 2 a second holds 4: four answered, then refused with the same Retry-After as in-process.
    expect(decisions.map((d) => d.allowed)).to.deep.equal([true, true, true, true, false, false]);
    expect(decisions[4]).to.include({ perSecond: 2, capacity: 4, remaining: 0, retryAfterSeconds: 1 });
    // Told once per outage; the store is asked once, then left alone for retryMs.
    expect(outages).to.have.length(1);
    expect((outages[0] as Error).message).to.equal('connection refused');
    expect(store.takes).to.equal(1);
  });

  it('falls back when the store does not answer within the timeout, and shares again once it answers', async () => {
    const store = new FakeStore(now);
    store.mode = 'hang';
    const limiter = shared(store);
    const d = await limiter.take('acct_1', 1);
    expect(d).to.include({ allowed: true, capacity: 2 });
    expect((outages[0] as Error).message).to.match(/did not answer within 20 ms/);
    store.mode = 'answer';
    t = 500;
    await limiter.take('acct_1', 1);
    expect(store.takes, 'left alone for retryMs').to.equal(1);
    t = 1000;
    await limiter.take('acct_1', 1);
    expect(store.takes).to.equal(2);
    expect(outages).to.have.length(2);
    expect(outages[1]).to.equal(null);
  });
});
