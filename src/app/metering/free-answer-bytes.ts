/**
 * The bytes of free answers an account may move: a token bucket of bytes per account (all its
 * keys, REST and MCP together), in this process, beside the request-rate bucket (token-buckets.ts).
 *
 * Free answers (the rate card's calls that cost no credits: the track record, meta, coverage,
 * usage, the lists) are paid for by nobody, and the largest is a megabyte or more: at the request
 * rate alone, three free keys could keep a two-core server busy serialising, hashing and
 * compressing them (issue 42). A paid answer is not counted: its rows or its call are paid for.
 *
 * What is counted is the answer's JSON as the server writes it, before compression (over MCP, the
 * whole result: `structuredContent` and its text block): the server's work grows with those
 * bytes, whatever the client accepts, and they are known before anything is sent. A 304 costs
 * nothing. The bucket is checked just before an answer is serialised, with nothing awaited between
 * that check and the take: an answer larger than what is left is still sent whole (the bucket goes
 * below zero), and the account's next free answers are refused (429 `rate_limited`, with
 * `bytes_per_second`) until it has refilled above zero. So concurrent calls cannot all slip
 * through on one balance, and no body is ever too large to be fetched once.
 */
import { AppError } from '../../core/errors.js';
import { PLANS, type Tier } from '../../domain/plans.js';
import type { RateDecision } from '../../web/meter.port.js';

/**
 * FREE_ANSWER_BYTES_PER_SECOND unless set: 256 KiB/s. A free client that keeps the daily bodies
 * and sends their ETags moves a few kilobytes a day; one that fetches the whole track record
 * (about 1 MB with today's history) gets it at once and can fetch it again within seconds, while
 * three such keys flooding it move well under 1 MB/s together (docs/operations.md).
 */
export const FREE_ANSWER_BYTES_DEFAULT = 256 * 1024;

/**
 * The bucket holds this many seconds of the account's budget (2 MiB on free): a client starting
 * up fetches the track record, meta and coverage at once. More would let a fresh account pull
 * several megabyte bodies in the same instant, which is what stalls the others' calls.
 */
export const FREE_ANSWER_BURST_SECONDS = 8;

/** Buckets beyond this many are forgotten (all, at once), as the request-rate buckets are. */
const MAX_BUCKETS = 200_000;

/** Who an answer goes to, as far as the budget cares. */
export interface FreeAnswerCaller {
  account_id: string;
  tier: Tier;
  /** The request-rate decision: an account the operator made unlimited (`perSecond` null) has no byte budget either. */
  rate: Pick<RateDecision, 'perSecond'>;
}

export class FreeAnswerBytes {
  private readonly buckets = new Map<string, { bytes: number; at: number }>();

  /**
   * `freePerSecond`: the free tier's budget (FREE_ANSWER_BYTES_PER_SECOND), null for none. A paid
   * tier gets that times its request rate over free's (hobbyist 2×, … enterprise 50×).
   */
  constructor(
    private readonly freePerSecond: number | null,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The caller's budget in bytes a second; null when it has none. */
  perSecondOf(caller: FreeAnswerCaller): number | null {
    if (this.freePerSecond === null || caller.rate.perSecond === null) return null;
    return Math.round((this.freePerSecond * PLANS[caller.tier].rate_per_second) / PLANS.free.rate_per_second);
  }

  /** Refuses (429 `rate_limited`) a free answer to an account whose bucket is spent; lets it through otherwise. */
  check(caller: FreeAnswerCaller): void {
    const perSecond = this.perSecondOf(caller);
    if (perSecond === null) return;
    const left = this.refilled(caller.account_id, perSecond).bytes;
    if (left > 0) return;
    const retry = Math.max(1, Math.ceil(-left / perSecond));
    const burst = perSecond * FREE_ANSWER_BURST_SECONDS;
    throw new AppError(
      'rate_limited',
      `This account's free answers (track record, meta, coverage, usage, lists; REST and MCP together) may move ${perSecond} bytes per second (bursts of ${burst}), and that is spent: retry in ${retry} s. Keep a daily body and send its ETag as If-None-Match: a 304 costs no bytes.`,
      { retry_after_seconds: retry, bytes_per_second: perSecond },
    );
  }

  /** Takes the bytes of a free answer sent; the bucket may go below zero (see above). */
  take(caller: FreeAnswerCaller, bytes: number): void {
    const perSecond = this.perSecondOf(caller);
    if (perSecond === null) return;
    this.refilled(caller.account_id, perSecond).bytes -= bytes;
  }

  private refilled(accountId: string, perSecond: number): { bytes: number; at: number } {
    const capacity = perSecond * FREE_ANSWER_BURST_SECONDS;
    const t = this.now();
    let b = this.buckets.get(accountId);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
      b = { bytes: capacity, at: t };
      this.buckets.set(accountId, b);
    } else {
      b.bytes = Math.min(capacity, b.bytes + ((t - b.at) / 1000) * perSecond);
      b.at = t;
    }
    return b;
  }
}
