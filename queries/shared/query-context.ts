import type { ReadStore } from '../../src/core/read-store.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Meter, Principal } from '../../src/web/meter.port.js';
import type { ReadModelMemo } from '../../src/core/read-model-memo.js';
import type { Entitlements } from '../../src/domain/plans.js';
import type { RateKey } from '../../src/domain/rate-card.js';
import type { Channel } from '../../src/domain/ledger/ledger.events.js';
import type { Visibility } from './visibility.js';
import type { LedgerHead, SignedLedgerHead } from '../../src/domain/ledger/ledger-head.js';

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

  constructor(
    readonly ctx: QueryContext,
    readonly principal: Principal,
    private readonly channel: Channel,
  ) {}

  /** What this caller may see now: as-of date (delay), history floor, coverage. */
  visibility(): Promise<Visibility> {
    return this.ctx.visibility(this.principal.entitlements);
  }

  /** Debits the call (durably); 429 when the credits do not cover it. */
  async charge(endpoint: RateKey, quantity = 1): Promise<void> {
    this.remaining = (await this.ctx.meter.charge(this.principal, endpoint, quantity, this.channel)).remaining;
  }
}
