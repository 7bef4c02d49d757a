import type { Request } from 'express';
import { AppError } from '../core/errors.js';
import type { Entitlements, Tier } from '../domain/plans.js';
import type { RateKey } from '../domain/rate-card.js';
import type { UsageFigures } from '../domain/ledger/ledger.figures.js';
import type { Channel } from '../domain/ledger/ledger.events.js';
import type { KeyLimits } from '../domain/accounts/key-limits.js';
import { HEADER } from './response-headers.js';
import type { CallBudget } from './call-budget.js';

/** What a key's request-rate check decided (src/app/metering/token-buckets.ts), and what the `RateLimit` headers say. */
export interface RateDecision {
  allowed: boolean;
  /** Requests per second; null = unlimited. */
  perSecond: number | null;
  /** The bucket's size: the burst. */
  capacity: number;
  /** Whole requests left now. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** When refused: seconds until a request is allowed again. */
  retryAfterSeconds: number;
}

/** Who is calling: the account behind the key and what its plan entitles it to right now. */
export interface Principal {
  account_id: string;
  key_id: string;
  tier: Tier;
  pro: boolean;
  entitlements: Entitlements;
  request_id: string;
  /** This request's rate check: refused requests are answered 429 `rate_limited` (`admit`). */
  rate: RateDecision;
  /**
   * What the key may spend and do (src/domain/accounts/key-limits.ts); null for a key without
   * limits. Its restriction is enforced before the call runs (`requireKeyMayCall`), its credit
   * limits with the debit.
   */
  limits: KeyLimits | null;
}

/**
 * Lets a principal's request through its rate limit, or refuses it: 429 `rate_limited` (distinct
 * from `credits_exhausted`), charged nothing. Called once the response carries the rate headers.
 */
export function admit(principal: Principal): void {
  const r = principal.rate;
  if (r.allowed) return;
  throw new AppError('rate_limited', `This account's keys may send ${r.perSecond} request${r.perSecond === 1 ? '' : 's'} per second together (bursts of ${r.capacity}); retry in ${r.retryAfterSeconds} s`, {
    retry_after_seconds: r.retryAfterSeconds,
    per_second: r.perSecond,
  });
}

/**
 * A request tsoa's security hook let through: `user` is its caller, `requestId` the id its response
 * names. Defined here, beside `Principal`, so that REST controllers of the read side and of the
 * write side share it (neither may import the other).
 */
export type AuthedRequest = Request & { user?: Principal; requestId?: string; budget?: CallBudget; rateKey?: RateKey };

/** The response header that shows a caller's credits left, on every /v1 response (`Meter.remaining`). */
export const CREDITS_HEADER = HEADER.creditsRemaining;

/** A caller's address, or how to find it when it is needed. */
export type ClientAddress = string | (() => string);

export interface Charge {
  cost: number;
  /** The `X-Credits-Remaining` value after the charge. */
  remaining: string;
  /** For a key with credit limits: what it may still spend (`X-Key-Budget-Remaining`); null otherwise. */
  keyBudgetRemaining: number | null;
}

/**
 * The one gate between a caller and the account's credits, for REST and MCP alike: who a key is,
 * what a call costs it, and the balance it sees (`X-Credits-Remaining`).
 */
export interface Meter {
  /**
   * The principal behind an API key: 401 `unauthorized` for a missing or unknown key, 403
   * `key_forbidden` for a revoked one (or a rotated one past its grace period), 403 `key_expired`
   * for one past its expiry. The principal
   * carries the request's rate check (`admit` enforces it); `client` (the caller's address)
   * limits requests without a valid key, 429 `rate_limited` instead of 401 once over the limit.
   * It may be given as a function: only a request without a valid key needs the address, and
   * working it out (parsing it, `TRUST_PROXY`'s hops) is then left off every valid call.
   */
  authenticate(key: string | undefined, requestId: string, client?: ClientAddress): Promise<Principal>;
  /**
   * Charges a call once its result is known: the cost comes from the rate card and the number of
   * rows it returns. Resolves only when the debit is durable; a call the credits do not cover is
   * refused with 429 `credits_exhausted`, one that would take the key past its credit limit with
   * 429 `key_budget_exhausted`, both charged nothing.
   */
  charge(principal: Principal, endpoint: RateKey, quantity: number, channel: Channel): Promise<Charge>;
  /**
   * A dry run of `charge`: the same decision on the account's ledger as it stands, appending
   * nothing. Resolves with what the call would cost and the balance now, or rejects with the
   * refusal the charge would get (`credits_exhausted`, …).
   */
  quote(principal: Principal, endpoint: RateKey, quantity: number, channel: Channel): Promise<Charge>;
  /** `X-Credits-Remaining` for a response that charged nothing (an error after authentication, MCP). */
  remaining(principal: Principal): Promise<string>;
  /** The account's plan, usage and balances now (GET /v1/usage). */
  usage(principal: Principal): Promise<UsageFigures>;
  /**
   * What each key of the caller's account spent in the service clock's UTC day and month, by key
   * id (a key absent spent nothing), fresh from the account's ledger stream: what its next debit
   * is decided on (GET /v1/keys).
   */
  keySpend(principal: Principal): Promise<ReadonlyMap<string, { today: number; month: number }>>;
}
