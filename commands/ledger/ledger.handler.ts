import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand, type Folded, type Stream } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Tier } from '../../src/domain/plans.js';
import { decideAndFold, ledgerOf, type DebitCredits, type LedgerCommand } from './ledger.decider.js';
import type { LedgerState } from '../../src/domain/ledger/ledger.state.js';
import type { LedgerEvent } from '../../src/events/ledger.events.js';

interface Cached extends Folded<LedgerState> {
  /** Clock reading (ms, monotonic) when the stream was last read. */
  checkedAt: number;
}

interface Queued {
  command: LedgerCommand;
  resolve(result: LedgerOutcome): void;
  reject(err: unknown): void;
}

/** How often a batch is decided again after another writer (a replica, the CLI) got in first. */
const RETRIES = { attempts: 10 };

type Outcome = { ok: true; events: LedgerEvent[]; state: LedgerState } | { ok: false; error: unknown };

export interface LedgerOutcome {
  /** The account's state after the command (what `X-Credits-Remaining` is computed from). */
  state: LedgerState;
  events: LedgerEvent[];
  /** Global position of the last event written, null when the command wrote nothing. */
  position: string | null;
}

/**
 * The write side of every account's credit ledger (stream `ledger-<account_id>`).
 *
 * Commands for one account are decided one after another against the stream's state, and all
 * commands that queued up while the previous append was committing are decided together and
 * appended in ONE append with the expected revision: many concurrent calls on one key cost one
 * commit, and the decision is never taken on stale state. Appends of different accounts meet in
 * the event store's group commit. A promise resolves only once its events are durable, so the
 * debit of every successful response is in the log before the response is sent.
 *
 * Another process appending to the same stream (the CLI's `packs add`, a second API replica) makes
 * the append fail on its revision; the command handler then decides the batch again on the fresh
 * state.
 */
export class LedgerService {
  private readonly cache = new Map<string, Cached>();
  private readonly streams = new Map<string, Stream<LedgerState, LedgerEvent>>();
  private readonly queues = new Map<string, Queued[]>();
  private readonly running = new Set<string>();

  constructor(
    private readonly events: EventStore,
    private readonly clock: Clock,
    /**
     * How long a state read from the stream is trusted without reading again. Decisions stay
     * exact regardless: an append on a stale revision fails and is decided again on the fresh
     * state. Only reads (tier for gating, `X-Credits-Remaining`) may lag another process's
     * write by this much.
     */
    private readonly freshForMs = 250,
  ) {}

  /** The account's current state, refreshed with anything appended since it was last read. */
  async state(accountId: string): Promise<LedgerState> {
    return (await this.refresh(accountId)).state;
  }

  /** Last known global position of the account's ledger (for read-your-writes on read models). */
  position(accountId: string): string | null {
    return this.cache.get(accountId)?.position ?? null;
  }

  debit(accountId: string, data: DebitCredits['data']): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'DebitCredits', data });
  }

  /** `packId` is the purchase reference: the same purchase again adds nothing. */
  buyPack(accountId: string, pack: { packId: string; credits: number }): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'PurchasePack', data: { pack_id: pack.packId, credits: pack.credits } });
  }

  changePlan(accountId: string, tier: Tier): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'SetPlan', data: { tier } });
  }

  /** Back to free at the end of the current period. */
  cancelPlan(accountId: string): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'CancelPlan' });
  }

  setPro(accountId: string, on: boolean): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'SetPro', data: { on } });
  }

  switchOverage(accountId: string, on: boolean): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'SwitchOverage', data: { on } });
  }

  execute(accountId: string, command: LedgerCommand): Promise<LedgerOutcome> {
    return new Promise((resolve, reject) => {
      const q = this.queues.get(accountId);
      if (q) q.push({ command, resolve, reject });
      else this.queues.set(accountId, [{ command, resolve, reject }]);
      if (!this.running.has(accountId)) void this.drain(accountId);
    });
  }

  /** The account's ledger stream, loaded from the cache: a retry reads what the cache missed. */
  private streamOf(accountId: string): Stream<LedgerState, LedgerEvent> {
    let stream = this.streams.get(accountId);
    if (!stream) this.streams.set(accountId, (stream = { ...ledgerOf(accountId), load: (fresh) => this.refresh(accountId, fresh) }));
    return stream;
  }

  private async refresh(accountId: string, force = false): Promise<Cached> {
    const now = performance.now();
    const cached = this.cache.get(accountId);
    if (!force && cached && cached.revision >= 0 && now - cached.checkedAt < this.freshForMs) return cached;
    const folded = await foldStream(this.events, this.streamOf(accountId), cached);
    const next = { state: folded.state, revision: folded.revision, position: folded.position, checkedAt: now };
    this.cache.set(accountId, next);
    return next;
  }

  private async drain(accountId: string): Promise<void> {
    this.running.add(accountId);
    try {
      for (;;) {
        const batch = this.queues.get(accountId);
        if (!batch || batch.length === 0) break;
        this.queues.delete(accountId);
        await this.decideAndAppend(accountId, batch);
      }
    } finally {
      this.running.delete(accountId);
      this.queues.delete(accountId);
    }
  }

  private async decideAndAppend(accountId: string, batch: Queued[]): Promise<void> {
    const ledger = this.streamOf(accountId);
    let handled;
    try {
      handled = await handleCommand(this.events, ledger, (state) => this.decideBatch(ledger.streamId, state, batch), RETRIES);
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    const { outcomes, state } = handled.result;
    const written = handled.written[0];
    if (written) this.cache.set(accountId, { checkedAt: performance.now(), state, revision: written.nextExpectedRevision, position: written.position });
    batch.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve({ state: o.state, events: o.events, position: o.events.length && written ? written.position : null });
      else q.reject(o.error);
    });
  }

  /** Each queued command on the state the previous one left; a refused one changes nothing. */
  private decideBatch(streamId: string, start: LedgerState, batch: Queued[]) {
    const now = this.clock.now();
    let state = start;
    const outcomes: Outcome[] = [];
    const events: LedgerEvent[] = [];
    for (const q of batch) {
      try {
        const decided = decideAndFold(state, q.command, now);
        state = decided.state;
        events.push(...decided.events);
        outcomes.push({ ok: true, events: decided.events, state });
      } catch (error) {
        outcomes.push({ ok: false, error });
      }
    }
    return { writes: [{ streamId, events }], result: { outcomes, state } };
  }
}
