import type { JobLease } from './lease.js';

/** A running job, as its starter returns it. */
export interface OwnedJob {
  /** Stops the job and resolves once nothing of it runs any more. */
  stop(): Promise<void>;
}

export interface RunWhileOwnedOptions {
  /** How often the owner renews (default: a third of the lease's ttl). */
  renewMs?: number;
  /** How often a process that does not own the job tries to take it (default 2 s). */
  retryMs?: number;
  /** How long to wait before the first try (default 0): a process pacing its claims of several leases. */
  firstTryMs?: number;
  /** A failure to start the job or to reach the store; the run goes on. */
  onError(err: unknown): void;
  /** This process started (true) or stopped (false) owning the job: logs, metrics, readiness. */
  onOwnerChange?(owned: boolean): void;
}

export interface LeaseRun {
  /** Whether this process runs the job now. */
  readonly owned: boolean;
  /**
   * `starting` until the first try to take the lease has settled, and while a job whose lease this
   * process took is starting; then `running` here or `standby` (another process holds the lease).
   */
  readonly state: 'starting' | 'running' | 'standby';
  /** Stops trying, stops the job if it runs here and releases the lease, so another process takes it at once. */
  stop(): Promise<void>;
}

/** Renews; when the store cannot be reached, keeps the job until the lease expired by this clock. */
async function keep(lease: JobLease, onError: (err: unknown) => void): Promise<boolean> {
  try {
    return await lease.renew();
  } catch (err) {
    onError(err);
    return lease.valid;
  }
}

/**
 * Runs a job only while this process owns its lease: tries to acquire it at once and then every
 * `retryMs`, starts the job when it is acquired, renews every `renewMs`, stops the job when a
 * renewal finds the lease lost (or cannot reach the store until the lease expired by this clock),
 * and releases it on `stop`. The job's own writes go through `lease.append` (the fence): a write
 * made after the lease was lost is refused even before the next renewal notices, and the job is
 * stopped then and there (`lease.onLost`).
 */
export function runWhileOwned(lease: JobLease, start: (lease: JobLease) => Promise<OwnedJob>, options: RunWhileOwnedOptions): LeaseRun {
  const renewMs = options.renewMs ?? Math.max(1, Math.floor(lease.options.ttlMs / 3));
  const retryMs = options.retryMs ?? 2000;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let job: OwnedJob | null = null;
  let starting = true;
  let pass: Promise<void> = Promise.resolve();

  const stopJob = async (): Promise<void> => {
    const running = job;
    job = null;
    if (!running) return;
    options.onOwnerChange?.(false);
    await running.stop();
  };
  const take = async (): Promise<void> => {
    try {
      if (!(await lease.acquire())) return;
      starting = true;
      job = await start(lease);
    } catch (err) {
      await lease.release();
      throw err;
    } finally {
      starting = false;
    }
    options.onOwnerChange?.(true);
  };
  const step = async (): Promise<void> => {
    if (!job) await take();
    else if (!(await keep(lease, (err) => options.onError(err)))) await stopJob();
  };
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = null;
      pass = step()
        .catch((err: unknown) => options.onError(err))
        // A lease lost during the pass (the job's own fenced write refused) stops the job at once.
        .finally(() => schedule(job && !lease.owned ? 0 : job ? renewMs : retryMs));
    }, ms);
    // A job runner alone never keeps the process alive.
    timer.unref();
  };
  // Between passes, a job that learns it lost the lease is stopped now, not at the next renewal.
  const unwatch = lease.onLost(() => {
    if (!timer) return;
    clearTimeout(timer);
    schedule(0);
  });
  schedule(options.firstTryMs ?? 0);

  return {
    get owned() {
      return job !== null;
    },
    get state() {
      return starting ? 'starting' : job ? 'running' : 'standby';
    },
    async stop() {
      stopped = true;
      unwatch();
      if (timer) clearTimeout(timer);
      await pass;
      await stopJob();
      await lease.release();
    },
  };
}
