import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from './clock.js';
import { ConcurrencyError } from './errors.js';
import type { AppendResult, EventStore, ExpectedRevision, RecordedEvent, StreamAppend } from './event-store.port.js';

/**
 * A job's lease, kept in the event store itself (so on every engine a deployment has): one owner at
 * a time, taken over once it expires, and a fence on the owner's writes (docs/scaling.md, "Each job
 * done once"). Leases are infrastructure, not business: their events live here, in the kernel.
 */

/** The stream of a job's lease. */
export const leaseStreamOf = (job: string) => `lease-${job}`;

export type LeaseEvent =
  | { type: 'LeaseAcquired'; data: { owner: string; expires_at: string } }
  | { type: 'LeaseRenewed'; data: { owner: string; expires_at: string } }
  | { type: 'LeaseReleased'; data: { owner: string } };

/** A fenced write refused: another owner took the lease (this one paused past its expiry, say). */
export class LeaseLostError extends Error {
  constructor(
    readonly job: string,
    readonly owner: string,
  ) {
    super(`lease of job ${job} lost by ${owner}`);
    this.name = 'LeaseLostError';
  }
}

export interface LeaseOptions {
  job: string;
  /** Unique per process: two processes with one id would both think they own the job. */
  owner: string;
  /** How long an acquire or a renewal holds the lease without another renewal. */
  ttlMs: number;
}

/** An owner id for this process: host, pid and a random part (a restarted process is a new owner). */
export const processOwnerId = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** Who holds the lease after its last event, at `now`; null: nobody (never taken, released or expired). */
export function holderOf(last: RecordedEvent | null, now: Date): { owner: string; expiresAt: Date } | null {
  if (!last || last.type === 'LeaseReleased') return null;
  const data = last.data as { owner: string; expires_at: string };
  const expiresAt = new Date(data.expires_at);
  return expiresAt.getTime() > now.getTime() ? { owner: data.owner, expiresAt } : null;
}

/**
 * The last event of a stream, found from a revision known to exist (or 0): doubling steps until a
 * revision is absent, then halving, so a few reads however long the stream has grown (every
 * renewal adds an event), and two when nothing changed since.
 */
export async function lastEventOf(store: EventStore, streamId: string, hint: number): Promise<RecordedEvent | null> {
  let last: RecordedEvent | null = null;
  let present = -1;
  let absent: number | null = null;
  let probe = Math.max(hint, 0);
  for (let step = 1; ; ) {
    const [event] = await store.readStream(streamId, { fromRevision: probe, maxCount: 1 });
    if (event) [last, present] = [event, event.revision];
    else absent = probe;
    if (absent === null) {
      probe = present + step;
      step *= 2;
    } else if (absent - present <= 1) return last;
    else probe = Math.floor((present + absent) / 2);
  }
}

/**
 * One process's claim on a job's lease. Its fencing token is the lease stream's revision after
 * this owner's latest acquire or renewal: `append` writes only while the stream is still there.
 */
export class JobLease {
  readonly streamId: string;
  /** The revision this owner wrote last and when it expires; null: not owned. */
  private held: { revision: number; expiresAt: Date } | null = null;
  /** The last revision seen: where the next look for the stream's end starts. */
  private seen = 0;
  private renewal: Promise<boolean> | null = null;
  private readonly lostListeners = new Set<() => void>();

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    readonly options: LeaseOptions,
  ) {
    this.streamId = leaseStreamOf(options.job);
  }

  /** Owned now: acquired or renewed last by this owner, and not known to be lost. */
  get owned(): boolean {
    return this.held !== null;
  }

  /** The fencing token: the lease stream's revision while owned. */
  get fence(): number | null {
    return this.held?.revision ?? null;
  }

  /** Owned and not yet expired by this process's clock (after that another owner may act). */
  get valid(): boolean {
    return this.held !== null && this.clock.now().getTime() < this.held.expiresAt.getTime();
  }

  /**
   * Calls `listener` each time this owner learns it lost the lease (a fenced write refused, a check
   * or a renewal that found another owner), so that its job stops at once, not at its next renewal.
   * Returns the way to stop listening.
   */
  onLost(listener: () => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }

  /** Takes the lease when nobody holds it (renews it when owned); false when another owner does or won the race. */
  async acquire(): Promise<boolean> {
    if (this.held) return this.renew();
    const last = await lastEventOf(this.store, this.streamId, this.seen);
    if (last) this.seen = last.revision;
    const holder = holderOf(last, this.clock.now());
    if (holder && holder.owner !== this.options.owner) return false;
    return this.write('LeaseAcquired', last ? last.revision : 'no_stream');
  }

  /** Extends the lease; false when it was lost (another owner appended since). One renewal at a time. */
  async renew(): Promise<boolean> {
    const renewal = (this.renewal ?? Promise.resolve(true))
      .catch(() => false)
      .then(() => (this.held ? this.write('LeaseRenewed', this.held.revision) : false));
    this.renewal = renewal;
    try {
      return await renewal;
    } finally {
      if (this.renewal === renewal) this.renewal = null;
    }
  }

  /** Gives the lease up at once (a stopping owner), unless it was lost already. */
  async release(): Promise<void> {
    await this.renewal?.catch(() => false);
    const held = this.held;
    if (!held) return;
    this.held = null;
    const released: LeaseEvent = { type: 'LeaseReleased', data: { owner: this.options.owner } };
    try {
      await this.store.append(this.streamId, [released], held.revision);
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
    }
  }

  /**
   * Appends the job's events only while this owner holds the lease, atomically with the check on
   * engines with multi-stream transactions (the check comes first, so a lost lease is what a write
   * refused for both reasons reports). Throws LeaseLostError, having written nothing, when another
   * owner took the lease; a renewal of this owner's that raced the write is waited for and retried.
   */
  async append(appends: StreamAppend[]): Promise<AppendResult[]> {
    for (;;) {
      const held = this.held;
      if (!held) throw new LeaseLostError(this.options.job, this.options.owner);
      try {
        const condition: StreamAppend = { streamId: this.streamId, events: [], expectedRevision: held.revision };
        return (await this.store.appendMany([condition, ...appends])).slice(1);
      } catch (err) {
        if (!(err instanceof ConcurrencyError) || err.streamId !== this.streamId) throw err;
        await this.renewal?.catch(() => false);
        if (this.held && this.held.revision !== held.revision) continue;
        this.lose(held);
        throw new LeaseLostError(this.options.job, this.options.owner);
      }
    }
  }

  /**
   * The fence for what is not an append (a read model's commit, an email, an HTTP request): throws
   * LeaseLostError when this owner does not hold the lease or another owner appended to the lease
   * stream since this owner's last write. `spareMs`: the lease must hold that long still (an effect
   * that takes up to `spareMs` ends before it expires); when it would expire sooner (or did, by
   * this clock) this owner renews first, and a renewal that fails throws (the store's error, or
   * LeaseLostError). A check before the act, not with it: an owner paused between the two can
   * still act once (docs/scaling.md, "Each job done once" and "Projections per read model").
   */
  async check(spareMs = 0): Promise<void> {
    // No await from the last wait to `renew()`, which marks its renewal in flight at once: checks made together share it.
    while (this.renewal) await this.renewal.catch(() => false);
    if (this.held && this.msLeft() <= spareMs && !(await this.renew())) throw new LeaseLostError(this.options.job, this.options.owner);
    const held = this.held;
    if (!held || this.msLeft() <= spareMs) throw new LeaseLostError(this.options.job, this.options.owner);
    const after = await this.store.readStream(this.streamId, { fromRevision: held.revision + 1, maxCount: 8 });
    if (after.some((e) => (e.data as { owner?: string }).owner !== this.options.owner)) {
      this.lose(held);
      throw new LeaseLostError(this.options.job, this.options.owner);
    }
  }

  /** How long the lease holds still by this process's clock (0 when not owned). */
  private msLeft(): number {
    return this.held ? this.held.expiresAt.getTime() - this.clock.now().getTime() : 0;
  }

  /** Forgets the lease `held` (when it is still the one held) and tells the listeners. */
  private lose(held: { revision: number; expiresAt: Date }): void {
    if (this.held !== held) return;
    this.held = null;
    for (const listener of this.lostListeners) listener();
  }

  private async write(type: 'LeaseAcquired' | 'LeaseRenewed', expected: ExpectedRevision): Promise<boolean> {
    const expiresAt = new Date(this.clock.now().getTime() + this.options.ttlMs);
    const event: LeaseEvent = { type, data: { owner: this.options.owner, expires_at: expiresAt.toISOString() } };
    try {
      const written = await this.store.append(this.streamId, [event], expected);
      this.held = { revision: written.nextExpectedRevision, expiresAt };
      this.seen = written.nextExpectedRevision;
      return true;
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      if (this.held) this.lose(this.held);
      return false;
    }
  }
}
