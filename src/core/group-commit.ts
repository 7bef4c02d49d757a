/**
 * Group commit for an event log adapter: writers that arrive while a commit is in flight wait and
 * share the next one, so one durable write (an fsync, a round trip) serves many. `commit` gets each
 * batch in arrival order; the next batch starts only after it settles. Used by the embedded and
 * the PostgreSQL logs.
 */
export class GroupCommitQueue<T> {
  private queue: T[] = [];
  private scheduled = false;
  private inFlight: Promise<void> | null = null;

  constructor(private readonly commit: (batch: T[]) => Promise<void>) {}

  push(item: T): void {
    this.queue.push(item);
    this.schedule();
  }

  /** Resolves once every item pushed so far has been committed (or failed). */
  async drain(): Promise<void> {
    while (this.inFlight || this.queue.length || this.scheduled) {
      await (this.inFlight ?? new Promise((r) => setImmediate(r)));
    }
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    // One turn of the event loop lets the writers of the same tick join this batch.
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.queue;
      this.queue = [];
      this.inFlight = (batch.length ? this.commit(batch) : Promise.resolve()).finally(() => {
        this.inFlight = null;
        if (this.queue.length) this.schedule();
      });
    });
  }
}
