import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand, type Folded, type StreamSource } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Tier } from '../../src/domain/plans.js';
import type { Decision } from '../../src/core/decider.js';
import { ledgerBatchDecider, type BatchOutcome, type LedgerDecisionState } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerState } from '../../src/domain/ledger/ledger.state.js';
import type { DebitCredits, Ledger, LedgerCommand, LedgerOutcome } from '../../src/domain/ledger/ledger.commands.js';
import type { KeySpend } from '../../src/domain/ledger/key-spend.js';
import { ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { ledgerSnapshots, SNAPSHOT_EVERY, type LedgerSnapshot } from '../../src/domain/ledger/ledger-snapshot.js';

/** What a command's promise resolves to (the CLI prints it). */
export type { LedgerOutcome };

interface Cached extends Folded<LedgerDecisionState> {
  /** Clock reading (ms, monotonic) when the stream was last read. */
  checkedAt: number;
  /** The revision of the account's latest snapshot (-1: none). */
  snapshotAt: number;
}

export interface LedgerServiceOptions {
  /**
   * How long a state read from the stream is trusted without reading again. Decisions stay
   * exact regardless: an append on a stale revision fails and is decided again on the fresh
   * state. Only reads (tier for gating, `X-Credits-Remaining`) may lag another process's
   * write by this much.
   */
  freshForMs?: number;
  /** Where snapshots of the ledger states are kept (none: every cold start folds the whole stream). */
  snapshots?: ReadStore;
  /** Events appended between two snapshots of an account. */
  snapshotEvery?: number;
  /** A snapshot that could not be written (the next append tries again). */
  onSnapshotError?: (err: unknown) => void;
}

interface Queued {
  command: LedgerCommand;
  resolve(result: LedgerOutcome): void;
  reject(err: unknown): void;
}

/** How often a batch is decided again after another writer (a replica, the CLI) got in first. */
const RETRIES = { attempts: 25 };

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
export class LedgerService implements Ledger {
  private readonly cache = new Map<string, Cached>();
  private readonly streams = new Map<string, StreamSource<LedgerDecisionState>>();
  private readonly queues = new Map<string, Queued[]>();
  private readonly running = new Set<string>();
  /** The stream read in flight per account (refresh). */
  private readonly reading = new Map<string, Promise<Cached>>();

  private readonly freshForMs: number;
  private readonly snapshotEvery: number;
  private snapshotsReady: Promise<void> | null = null;

  constructor(
    private readonly events: EventStore,
    private readonly clock: Clock,
    private readonly options: LedgerServiceOptions = {},
  ) {
    this.freshForMs = options.freshForMs ?? 250;
    this.snapshotEvery = options.snapshotEvery ?? SNAPSHOT_EVERY;
  }

  /** The account's current state (Ledger.state). A debit is decided on the cached one: a stale read fails its append and is decided again. */
  async state(accountId: string, options: { fresh?: boolean } = {}): Promise<LedgerState> {
    return (await this.refresh(accountId, options.fresh === true)).state.ledger;
  }

  /** What each key of the account spent today and this month, fresh from the stream (Ledger.keySpend). */
  async keySpend(accountId: string): Promise<KeySpend> {
    return (await this.refresh(accountId, true)).state.keys;
  }

  /** Last known global position of the account's ledger (for read-your-writes on read models). */
  position(accountId: string): string | null {
    return this.cache.get(accountId)?.position ?? null;
  }

  debit(accountId: string, data: DebitCredits['data']): Promise<LedgerOutcome> {
    return this.execute(accountId, { type: 'DebitCredits', data });
  }

  /**
   * The decision `command` would get now, appending nothing (a dry run, Ledger.quote): resolves
   * with the outcome it would have (the state it would leave, what the key could still spend), or
   * rejects with its refusal, key limits included: the same decider on the state a debit would be
   * decided on. On the state as last read (250 ms at most): the real command may still meet
   * another process's append, and is decided again then.
   */
  async quote(accountId: string, command: LedgerCommand): Promise<LedgerOutcome> {
    const current = await this.refresh(accountId);
    const decided = ledgerBatchDecider.decide(current.state, [command], this.clock.now()) as Decision<LedgerDecisionState, LedgerEvent, BatchOutcome[]>;
    const outcome = decided.result?.[0];
    if (!outcome) throw new Error('the ledger decided no outcome for a dry run');
    if (!outcome.ok) throw outcome.error;
    const out: LedgerOutcome = { state: outcome.state, events: outcome.events, position: null };
    if (outcome.key_budget_remaining !== undefined) out.key_budget_remaining = outcome.key_budget_remaining;
    return out;
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
  private streamOf(accountId: string): StreamSource<LedgerDecisionState> {
    let stream = this.streams.get(accountId);
    if (!stream) this.streams.set(accountId, (stream = { streamId: ledgerStream(accountId), load: (fresh) => this.refresh(accountId, fresh) }));
    return stream;
  }

  /**
   * The cached state while fresh, else one read of what the stream holds beyond it, shared by
   * every caller meanwhile. Each metered call asks for the state: once another process (a
   * replica) had appended thousands of debits, 50 calls in flight each read and folded all of
   * them at once, and one API process answered 50 calls a second for 3 s. A forced read (after a
   * conflict) must see appends made before it was asked, so it waits for a read in flight and
   * reads again.
   */
  private refresh(accountId: string, force = false): Promise<Cached> {
    const cached = this.cache.get(accountId);
    if (!force && cached && cached.revision >= 0 && performance.now() - cached.checkedAt < this.freshForMs) return Promise.resolve(cached);
    const running = this.reading.get(accountId);
    if (running && !force) return running;
    if (running) {
      const again = () => this.refresh(accountId, true);
      return running.then(again, again);
    }
    const read = this.readFurther(accountId).finally(() => this.reading.delete(accountId));
    this.reading.set(accountId, read);
    return read;
  }

  private async readFurther(accountId: string): Promise<Cached> {
    const now = performance.now();
    const cached = this.cache.get(accountId) ?? (await this.fromSnapshot(accountId));
    const folded = await foldStream(this.events, ledgerBatchDecider, ledgerStream(accountId), cached);
    const next = { state: folded.state, revision: folded.revision, position: folded.position, checkedAt: now, snapshotAt: cached?.snapshotAt ?? -1 };
    // An append of this service may have landed while the stream was read: keep the newer state.
    const latest = this.cache.get(accountId);
    if (latest && latest !== cached && latest.revision > next.revision) return latest;
    this.cache.set(accountId, next);
    this.snapshotIfDue(accountId, next);
    return next;
  }

  private readySnapshots(): Promise<void> {
    return (this.snapshotsReady ??= this.options.snapshots!.register([ledgerSnapshots]));
  }

  /**
   * The account's snapshot, when it is anchored to the log: the event at its revision must be
   * there and carry the snapshot's `last_hash`. Otherwise (none, dropped, from another log,
   * unreadable) there is none, and the stream is folded from its start.
   */
  private async fromSnapshot(accountId: string): Promise<Cached | undefined> {
    if (!this.options.snapshots) return undefined;
    let snapshot: LedgerSnapshot | null;
    try {
      await this.readySnapshots();
      snapshot = await this.options.snapshots.get(ledgerSnapshots, accountId);
    } catch (err) {
      this.options.onSnapshotError?.(err);
      return undefined;
    }
    if (!snapshot || snapshot.account_id !== accountId || !Number.isSafeInteger(snapshot.revision) || snapshot.revision < 0) return undefined;
    const [anchor] = await this.events.readStream(ledgerStream(accountId), { fromRevision: snapshot.revision, maxCount: 1 });
    const hash = (anchor?.data as { hash?: unknown } | undefined)?.hash;
    if (anchor?.revision !== snapshot.revision || hash !== snapshot.state.last_hash) return undefined;
    // One written before key limits has no key spend: the fold from the start gives it exactly.
    if (!snapshot.key_spend || typeof snapshot.key_spend !== 'object') return undefined;
    // Read again below (`checkedAt` 0): the snapshot is only where the fold starts.
    const state = { ledger: snapshot.state, keys: snapshot.key_spend };
    return { state, revision: snapshot.revision, position: snapshot.position, checkedAt: 0, snapshotAt: snapshot.revision };
  }

  /** Writes a snapshot once `snapshotEvery` events were appended since the last; nobody waits for it. */
  private snapshotIfDue(accountId: string, folded: Cached): void {
    const store = this.options.snapshots;
    if (!store || this.snapshotEvery <= 0 || folded.position === null || folded.revision - folded.snapshotAt < this.snapshotEvery) return;
    folded.snapshotAt = folded.revision;
    const doc: LedgerSnapshot = { account_id: accountId, revision: folded.revision, position: folded.position, state: folded.state.ledger, key_spend: folded.state.keys };
    void this.readySnapshots()
      .then(() => store.commit({ writes: [{ op: 'upsert', collection: ledgerSnapshots.name, id: accountId, doc }], checkpoints: {} }))
      .catch((err: unknown) => {
        folded.snapshotAt = -1;
        this.options.onSnapshotError?.(err);
      });
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
    const commands: LedgerCommand[] = [];
    for (let i = 0; i < batch.length; i++) commands.push(batch[i]!.command);
    let handled;
    try {
      handled = await handleCommand(this.events, ledgerBatchDecider, this.streamOf(accountId), commands, this.clock, RETRIES);
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    const { state, revision, position } = handled;
    const outcomes = handled.result!;
    const written = handled.written.length > 0;
    if (written) {
      const next = { checkedAt: performance.now(), state, revision, position, snapshotAt: this.cache.get(accountId)?.snapshotAt ?? -1 };
      this.cache.set(accountId, next);
      this.snapshotIfDue(accountId, next);
    }
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i]!;
      if (!o.ok) {
        batch[i]!.reject(o.error);
        continue;
      }
      const out: LedgerOutcome = { state: o.state, events: o.events, position: o.events.length && written ? position : null };
      if (o.key_budget_remaining !== undefined) out.key_budget_remaining = o.key_budget_remaining;
      batch[i]!.resolve(out);
    }
  }
}
