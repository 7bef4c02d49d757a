/**
 * When the dispatcher works: one pass at a time (decisions, and on the timer's passes the due
 * retries too); a wake during a pass runs one more after it, and wakes meanwhile share it. The
 * timer (`unref`'d: the dispatcher alone never keeps the process alive) passes every `intervalMs`.
 */
export interface PassWork {
  decide(): Promise<void>;
  publishDue(): Promise<void>;
  report(err: unknown): void;
  stopped(): boolean;
}

export class DispatchPasses {
  private chain: Promise<void> = Promise.resolve();
  private queuedPass: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly work: PassWork,
    private readonly intervalMs: number,
  ) {}

  pass(withDue: boolean): Promise<void> {
    if (this.queuedPass && !withDue) return this.queuedPass;
    const run = this.chain.then(async () => {
      if (this.queuedPass === run) this.queuedPass = null;
      if (this.work.stopped()) return;
      await this.attempt(() => this.work.decide());
      if (withDue) await this.attempt(() => this.work.publishDue());
    });
    this.queuedPass = withDue ? null : run;
    this.chain = run;
    return run;
  }

  wake(): void {
    void this.pass(false);
  }

  /** Passes with the due retries every `intervalMs`, until `stop`. */
  schedule(): void {
    if (this.work.stopped()) return;
    this.timer = setTimeout(() => {
      void this.pass(true).finally(() => this.schedule());
    }, this.intervalMs);
    this.timer.unref();
  }

  /** No more timer; the pass in progress (and those queued) ends. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.chain;
  }

  /** A failed step is reported; the next pass tries again. */
  private async attempt(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.work.report(err);
    }
  }
}
