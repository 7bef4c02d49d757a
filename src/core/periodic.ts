/**
 * A background pass run every `intervalMs` (the next wait starts when a pass ends) and on demand
 * (`drain`), never two at once: what the reactors that work through a read model share.
 */
export interface Periodic {
  /** Runs one pass now, after any pass in progress; resolves with what the pass returns. */
  drain(): Promise<number>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
  /** True once `stop` was called: a long pass checks it between items. */
  readonly stopped: boolean;
}

export function startPeriodic(pass: () => Promise<number>, intervalMs: number, onError: (err: unknown) => void): Periodic {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  const drain = (): Promise<number> => {
    const run = chain.then(pass);
    chain = run.catch(() => undefined);
    return run;
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      drain()
        .catch(onError)
        .finally(schedule);
    }, intervalMs);
    // A reactor alone never keeps the process alive.
    timer.unref();
  };
  schedule();
  return {
    drain,
    get stopped() {
      return stopped;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await chain;
    },
  };
}
