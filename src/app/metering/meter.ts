import type { LedgerService } from '../../../commands/ledger/ledger.handler.js';
import { apiKeys, type ApiKeyDoc } from '../../../projections/api-keys/api-keys.projection.js';
import { accounts, type AccountDoc } from '../../../projections/shared/accounts.js';
import type { Clock } from '../../core/clock.js';
import { AppError, ConcurrencyError } from '../../core/errors.js';
import type { Charge, ClientAddress, Meter, Principal } from '../../web/meter.port.js';
import type { ReadStore } from '../../core/read-store.port.js';
import { hashApiKey } from '../../domain/accounts/api-keys.js';
import { creditsRemainingHeader, stateAt, usageFigures, type UsageFigures } from '../../domain/ledger/ledger.figures.js';
import type { LedgerState } from '../../domain/ledger/ledger.state.js';
import { ANONYMOUS_RATE_PER_SECOND, PLANS, entitlementsOf } from '../../domain/plans.js';
import { TokenBuckets, type RateLimiter } from './token-buckets.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import type { AccountEvent } from '../../domain/accounts/account.events.js';
import { RATE_CARD, costOf, type RateKey } from '../../domain/rate-card.js';
import type { Channel } from '../../domain/ledger/ledger.events.js';
import type { DebitCredits } from '../../domain/ledger/ledger.commands.js';
import { spentAt } from '../../domain/ledger/key-spend.js';
import { keyBudgetOf, limitsOf, requireUnexpired } from '../../domain/accounts/key-limits.js';

/** How long a key lookup is trusted at most; a key event in the read models drops it sooner (see forgetKeys). */
const KEY_CACHE_MS = 5000;

/** Revocations and rotations seen in the log kept at most (then forgotten, all at once: the read models have them by then). */
const MAX_LOGGED_KEYS = 100_000;

type LoggedKeyStatus = Partial<Pick<ApiKeyDoc, 'status' | 'grace_until' | 'limits'>>;

/** The meter over the accounts' credit ledgers and the api-keys read model. */
/** The events whose data `keyEventsSeen` reads: the rest of a batch is read by type and stream alone. */
export const KEY_STATUS_EVENTS = ['ApiKeyRevoked', 'ApiKeyRotated', 'ApiKeyLimitsSet'] as const;

/**
 * The debit of a call: what it cost, for whom, over which face, with the key's credit limits
 * when it has any (the ledger refuses a debit past them). The one way a call's debit is built:
 * a dry run decides this same command without appending it (Ledger.preview).
 */
export function debitCommand(principal: Principal, endpoint: RateKey, cost: number, channel: Channel): DebitCredits {
  const data: DebitCredits['data'] = { request_id: principal.request_id, endpoint, channel, cost, key_id: principal.key_id };
  const budget = keyBudgetOf(principal.limits);
  if (budget) data.key_budget = budget;
  return { type: 'DebitCredits', data };
}

export class LedgerMeter implements Meter {
  private readonly keys = new Map<string, { at: number; doc: Promise<ApiKeyDoc | null> }>();
  private readonly accountDocs = new Map<string, { at: number; doc: Promise<AccountDoc | null> }>();
  // Requests without a valid key are limited per process: a flood of them never reaches a shared store.
  private readonly anonymous = new TokenBuckets();
  /** Keys revoked, rotated or given new limits in the log, by key id, perhaps before the key read model says so (keyEventsSeen). */
  private readonly loggedKeys = new Map<string, LoggedKeyStatus>();

  constructor(
    private readonly ledger: Pick<LedgerService, 'state' | 'execute' | 'keySpend' | 'quote'>,
    private readonly reads: ReadStore,
    private readonly clock: Clock,
    private readonly onDebited: (endpoint: RateKey, channel: Channel, cost: number) => void = () => undefined,
    /** The accounts' buckets: in this process (default) or shared by the replicas (shared-buckets.ts). */
    private readonly rates: RateLimiter = new TokenBuckets(),
    /** The wall clock a rotated key's grace period ends on, even where SCORES_NOW pins `clock`. */
    private readonly realClock: Clock = clock,
  ) {}

  async authenticate(key: string | undefined, requestId: string, client?: ClientAddress): Promise<Principal> {
    if (!key) throw this.anonymousRefusal(client, 'send your API key in the X-API-Key header');
    // Node joins repeated headers with ", "; no key holds a comma.
    if (key.includes(',')) throw this.anonymousRefusal(client, 'send one X-API-Key header (this request has several)');
    const doc = this.withLoggedStatus(await this.keyDoc(hashApiKey(key.trim())));
    if (!doc) throw this.anonymousRefusal(client, 'unknown API key');
    const now = this.clock.now();
    if (doc.status === 'revoked') throw new AppError('key_forbidden', `key ${doc.prefix}… was revoked`);
    if (doc.status === 'rotated' && (doc.grace_until === null || doc.grace_until <= this.realClock.now().toISOString())) {
      throw new AppError('key_forbidden', `key ${doc.prefix}… was rotated and its grace period ended at ${doc.grace_until ?? 'once'}`);
    }
    // On the wall clock, as a rotated key's grace: a credential's life is real time even where SCORES_NOW pins the data.
    requireUnexpired(doc.limits, doc.prefix, this.realClock.now());
    const ledger = stateAt(await this.ledger.state(doc.account_id), now);
    const override = (await this.accountDoc(doc.account_id))?.rate_limit;
    const perSecond = override === 'unlimited' ? null : typeof override === 'number' ? override : PLANS[ledger.tier].rate_per_second;
    return {
      account_id: doc.account_id,
      key_id: doc.key_id,
      tier: ledger.tier,
      pro: ledger.pro,
      entitlements: entitlementsOf(ledger.tier, ledger.pro),
      request_id: requestId,
      rate: await this.takeRate(doc.account_id, perSecond),
      // As the key read model (or the log, keyEventsSeen) wrote them: all five fields.
      limits: doc.limits ?? null,
    };
  }

  /**
   * One request's token from its account's bucket, REST and MCP alike: every key of an account
   * shares one bucket, so more keys never mean a higher rate (the override applies per account too).
   */
  private takeRate(accountId: string, perSecond: number | null) {
    return this.rates.take(accountId, perSecond);
  }

  /** 401 for a request without a valid key, or 429 once its client address sent too many. */
  private anonymousRefusal(client: ClientAddress | undefined, why: string): AppError {
    if (client !== undefined) {
      const d = this.anonymous.take(typeof client === 'function' ? client() : client, ANONYMOUS_RATE_PER_SECOND);
      if (!d.allowed) {
        return new AppError('rate_limited', `Too many requests without a valid key from this address; retry in ${d.retryAfterSeconds} s`, {
          retry_after_seconds: d.retryAfterSeconds,
        });
      }
    }
    return new AppError('unauthorized', why);
  }

  async charge(principal: Principal, endpoint: RateKey, quantity: number, channel: Channel): Promise<Charge> {
    const cost = costOf(endpoint, quantity);
    const outcome = await this.ledger.execute(principal.account_id, debitCommand(principal, endpoint, cost, channel)).catch((err: unknown) => {
      // Another process (a second API replica) kept winning the race to the account's ledger
      // stream through every retry: nothing was charged, and the caller may simply try again.
      if (err instanceof ConcurrencyError) throw new AppError('rate_limited', "This account's ledger is busy with calls served by another process; nothing was charged: retry in 1 s", { retry_after_seconds: 1 });
      throw err;
    });
    this.onDebited(endpoint, channel, cost);
    // The key's budget is said on the answers of priced endpoints (a free one never touches it).
    const keyBudgetRemaining = RATE_CARD[endpoint].credits > 0 ? (outcome.key_budget_remaining ?? null) : null;
    return { cost, remaining: this.remainingOf(outcome.state), keyBudgetRemaining };
  }

  async quote(principal: Principal, endpoint: RateKey, quantity: number, channel: Channel): Promise<Charge> {
    const cost = costOf(endpoint, quantity);
    // The very debit the call would make: a key past its limit gets its refusal here too.
    const outcome = await this.ledger.quote(principal.account_id, debitCommand(principal, endpoint, cost, channel));
    const keyBudgetRemaining = RATE_CARD[endpoint].credits > 0 ? (outcome.key_budget_remaining ?? null) : null;
    return { cost, remaining: await this.remaining(principal), keyBudgetRemaining };
  }

  async remaining(principal: Principal): Promise<string> {
    return this.remainingOf(await this.ledger.state(principal.account_id));
  }

  /** What the account has spent: fresh from its stream, so a call just answered by another replica is in it. */
  async usage(principal: Principal): Promise<UsageFigures> {
    return usageFigures(await this.ledger.state(principal.account_id, { fresh: true }), this.clock.now());
  }

  /** Meter.keySpend: the ledger's key spend at the clock's day and month. */
  async keySpend(principal: Principal): Promise<ReadonlyMap<string, { today: number; month: number }>> {
    const spend = await this.ledger.keySpend(principal.account_id);
    const at = this.clock.now().toISOString();
    return new Map(Object.keys(spend).map((k) => [k, spentAt(spend, k, at)]));
  }

  /** Drops every cached key lookup: call it when a key event (issue, rotation, revocation) reaches the read models. */
  forgetKeys(): void {
    this.keys.clear();
    this.accountDocs.clear();
  }

  /**
   * Events of the log as this process learns of them (key-events.ts, the projector runner): a
   * revocation or a rotation is enforced from now on, even while the key read model, projected
   * perhaps by another process, does not have it yet; any account event drops the cached lookups.
   */
  keyEventsSeen(batch: readonly RecordedEvent[]): void {
    // Data is read of KEY_STATUS_EVENTS only: a follower of the log may hand the others' as null.
    let seen = false;
    for (const raw of batch) {
      if (!raw.streamId.startsWith('account-')) continue;
      seen = true;
      const event = raw as unknown as AccountEvent;
      if (this.loggedKeys.size >= MAX_LOGGED_KEYS) this.loggedKeys.clear();
      // Another event's data may be null here (see above): only the status events name a key.
      const logged = this.loggedKeys.get((event.data as { key_id?: string } | null)?.key_id ?? '');
      if (event.type === 'ApiKeyRevoked') this.loggedKeys.set(event.data.key_id, { status: 'revoked', grace_until: null });
      if (event.type === 'ApiKeyRotated' && logged?.status !== 'revoked') {
        this.loggedKeys.set(event.data.key_id, { ...logged, status: 'rotated', grace_until: event.data.grace_until });
      }
      if (event.type === 'ApiKeyLimitsSet') this.loggedKeys.set(event.data.key_id, { ...logged, limits: limitsOf(event.data) });
    }
    if (seen) this.forgetKeys();
  }

  /** The key's document with what the log said of it since, when the read model has not caught up. */
  private withLoggedStatus(doc: ApiKeyDoc | null): ApiKeyDoc | null {
    const logged = doc && doc.status !== 'revoked' ? this.loggedKeys.get(doc.key_id) : undefined;
    return logged ? { ...doc!, ...logged } : doc;
  }

  private remainingOf(state: LedgerState): string {
    return creditsRemainingHeader(state, this.clock.now());
  }

  /** Key lookups by hash, cached so that a revocation takes effect as soon as the key read model has it, as without the cache. */
  private keyDoc(hash: string): Promise<ApiKeyDoc | null> {
    return cached(this.keys, hash, () => this.reads.get(apiKeys, hash));
  }

  /** The account's document (its rate override), cached like the keys. */
  private accountDoc(accountId: string): Promise<AccountDoc | null> {
    return cached(this.accountDocs, accountId, () => this.reads.get(accounts, accountId));
  }
}

/** A read-model lookup kept KEY_CACHE_MS at most (dropped sooner by `forgetKeys`); 10,000 entries at most. */
function cached<T>(cache: Map<string, { at: number; doc: Promise<T> }>, id: string, load: () => Promise<T>): Promise<T> {
  const now = performance.now();
  const hit = cache.get(id);
  if (hit && now - hit.at < KEY_CACHE_MS) return hit.doc;
  if (cache.size > 10_000) cache.clear();
  const doc = load();
  cache.set(id, { at: now, doc });
  return doc;
}
