import type { ReadStore } from '../../src/core/read-store.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Meter, Principal } from '../../src/web/meter.port.js';
import type { ReadModelMemo } from '../../src/core/read-model-memo.js';
import type { RequestLog } from '../../src/core/request-log.js';
import type { Entitlements } from '../../src/domain/plans.js';
import { RATE_CARD, type RateKey } from '../../src/domain/rate-card.js';
import type { Channel } from '../../src/domain/ledger/ledger.events.js';
import type { Visibility } from './visibility.js';
import type { LedgerHead, SignedLedgerHead } from '../../src/domain/ledger/ledger-head.js';
import { DryRunPriced, NO_BUDGET, requireWithinBudget, unitsAllowed, type CallBudget } from '../../src/web/call-budget.js';

/** What the read side needs of the app serving it, for REST controllers and MCP tools alike. */
export interface QueryContext {
  reads: ReadStore;
  /**
   * Answers built once per read-model position that matters to them (the free endpoints' bodies:
   * meta, track record, coverage), dropped when a projected batch changes what they read.
   */
  memo: ReadModelMemo;
  /** The log, read where a read model points into it (the ledger's lines are stored there once). */
  events: Pick<EventStore, 'readStream'>;
  meter: Meter;
  /** The accounts' calls, as the request log keeps them (GET /v1/requests). */
  requests: Pick<RequestLog, 'list'>;
  /** What a plan may see now (as-of date, floor, coverage). */
  visibility(entitlements: Entitlements): Promise<Visibility>;
  /** Base of absolute URLs: PUBLIC_BASE_URL, else the address the server listens on. */
  baseUrl(): string;
  /** The head signed now with the service's ledger key; null when this process has none (docs/ledger.md, "Signed heads"). */
  signHead(head: Omit<LedgerHead, 'at'>): SignedLedgerHead | null;
  /** Read your own writes: resolves once the read models hold the account's last ledger write (2 s at most). */
  ledgerCaughtUp(accountId: string): Promise<void>;
}

/**
 * One call of one caller over one face (the ledger records the channel): what it may see, what it
 * is charged. Each read's `*.query.ts` exports `run(call, ...parameters)`, the endpoint's whole body,
 * so that its tsoa controller and its MCP tool answer, refuse and charge alike.
 */
export class MeteredCall {
  /** `X-Credits-Remaining` after the charge; null until the call is charged. */
  remaining: string | null = null;
  /** What the call was charged (0 when free); null until it is charged. */
  cost: number | null = null;
  /** `X-Key-Budget-Remaining` after the charge: null until then, and for a key without credit limits. */
  keyBudgetRemaining: number | null = null;

  constructor(
    readonly ctx: QueryContext,
    readonly principal: Principal,
    private readonly channel: Channel,
    /** The caller's dry run and maximum (src/web/call-budget.ts). */
    readonly budget: CallBudget = NO_BUDGET,
    /** The call's rate-card key, when known before it runs: a call priced per call is held to its maximum before it reads. */
    private readonly endpoint?: RateKey,
  ) {}

  /**
   * What this caller may see now: as-of date (delay), history floor, coverage. Every read asks it
   * once its parameters are parsed and before it reads, so a call priced per call that its
   * maximum does not cover is refused here (after a malformed parameter's 400, before any read).
   */
  visibility(): Promise<Visibility> {
    if (this.endpoint && RATE_CARD[this.endpoint].unit === 'call') requireWithinBudget(this.budget, this.endpoint, 1);
    return this.ctx.visibility(this.principal.entitlements);
  }

  /**
   * The rows (or constituents) of `endpoint` the caller's maximum pays for: a row-priced read
   * stops one row beyond it and refuses (`overBudget`), so a capped call never reads the rows it
   * will not be paid for. Infinity without a maximum.
   */
  unitsAllowed(endpoint: RateKey): number {
    return unitsAllowed(this.budget, endpoint);
  }

  /** The refusal of a read stopped beyond `unitsAllowed`: it costs at least one unit more than the maximum pays for. */
  overBudget(endpoint: RateKey): void {
    requireWithinBudget(this.budget, endpoint, this.unitsAllowed(endpoint) + 1, false);
  }

  /**
   * Debits the call (durably); 429 when the credits do not cover it, 412 `cost_exceeds_max` above
   * the caller's maximum. A dry run stops here with its price (DryRunPriced), charged nothing:
   * every check the call would meet before it is charged has been met.
   */
  async charge(endpoint: RateKey, quantity = 1): Promise<void> {
    requireWithinBudget(this.budget, endpoint, quantity);
    if (this.budget.dryRun) {
      const quote = await this.ctx.meter.quote(this.principal, endpoint, quantity, this.channel);
      throw new DryRunPriced(quote.cost, quote.remaining, quote.keyBudgetRemaining);
    }
    const charged = await this.ctx.meter.charge(this.principal, endpoint, quantity, this.channel);
    this.remaining = charged.remaining;
    this.cost = charged.cost;
    this.keyBudgetRemaining = charged.keyBudgetRemaining;
  }
}
