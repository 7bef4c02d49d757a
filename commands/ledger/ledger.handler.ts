import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore, NewEvent } from '../../src/core/event-store.port.js';
import { decideAndFold, type DebitCredits, type LedgerCommand } from './ledger.decider.js';
import { evolve, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream, type LedgerEvent } from '../../src/events/ledger.events.js';

interface Cached {
  /** Clock reading (ms, monotonic) when the stream was last read. */
  checkedAt: number;
  state: LedgerState;
  /** Revision of the last event folded into `state`; -1 for an empty stream. */
  revision: number;
  /** Global position of the last event this process appended or folded. */
  position: string | null;
}

interface Queued {
  command: LedgerCommand;
  resolve(result: LedgerOutcome): void;
  reject(err: unknown): void;
}

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
 * the append fail on its revision; the batch is then decided again on the fresh state.
 */
export class LedgerService {
  private readonly cache = new Map<string, Cached>();
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

  execute(accountId: string, command: LedgerCommand): Promise<LedgerOutcome> {
    return new Promise((resolve, reject) => {
      const q = this.queues.get(accountId);
      if (q) q.push({ command, resolve, reject });
      else this.queues.set(accountId, [{ command, resolve, reject }]);
      if (!this.running.has(accountId)) void this.drain(accountId);
    });
  }

  debit(accountId: string, data: DebitCredits['data']): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'DebitCredits', data });
  }

  private async refresh(accountId: string, force = false): Promise<Cached> {
    const now = performance.now();
    const cached = this.cache.get(accountId) ?? { checkedAt: 0, state: initialLedgerState, revision: -1, position: null };
    if (!force && cached.revision >= 0 && now - cached.checkedAt < this.freshForMs) return cached;
    const fresh = await this.events.readStream(ledgerStream(accountId), { fromRevision: cached.revision + 1 });
    let state = cached.state;
    for (const e of fresh) state = evolve(state, e as unknown as LedgerEvent);
    const last = fresh[fresh.length - 1];
    const next = last ? { checkedAt: now, state, revision: last.revision, position: last.position } : { ...cached, checkedAt: now };
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
    for (let attempt = 1; ; attempt++) {
      let base: Cached;
      try {
        base = await this.refresh(accountId, attempt > 1);
      } catch (err) {
        for (const q of batch) q.reject(err);
        return;
      }
      const now = this.clock.now();
      let state = base.state;
      const outcomes: ({ ok: true; events: LedgerEvent[]; state: LedgerState } | { ok: false; error: unknown })[] = [];
      const all: LedgerEvent[] = [];
      for (const q of batch) {
        try {
          const decided = decideAndFold(state, q.command, now);
          const events = decided.events;
          state = decided.state;
          all.push(...events);
          outcomes.push({ ok: true, events, state });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
      let position: string | null = null;
      if (all.length) {
        try {
          const written = await this.events.append(
            ledgerStream(accountId),
            all.map((e): NewEvent => ({ type: e.type, data: e.data })),
            base.revision < 0 ? 'no_stream' : base.revision,
          );
          position = written.position;
          this.cache.set(accountId, { checkedAt: performance.now(), state, revision: written.nextExpectedRevision, position });
        } catch (err) {
          if (err instanceof ConcurrencyError && attempt < 10) continue;
          for (const q of batch) q.reject(err);
          return;
        }
      }
      batch.forEach((q, i) => {
        const o = outcomes[i]!;
        if (o.ok) q.resolve({ state: o.state, events: o.events, position: o.events.length ? position : null });
        else q.reject(o.error);
      });
      return;
    }
  }
}
