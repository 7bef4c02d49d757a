/**
 * The send lanes: a message received goes to its webhook's lane. Each webhook's messages go one
 * after the other; different webhooks' go concurrently, at most `limit` sends at once over all
 * lanes, so one slow receiver holds one slot, not the others.
 */
export class SendLanes {
  private readonly pending = new Map<number, Set<string>>();
  private readonly lanes = new Map<number, Promise<void>>();
  private sending = 0;
  private readonly slots: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly send: (webhookId: number, messageId: string) => Promise<void>,
    private readonly stopped: () => boolean,
  ) {}

  /** Queues the message on its webhook's lane (a message already waiting there is not added twice). */
  hand(webhookId: number, messageId: string): void {
    if (this.stopped()) return;
    let set = this.pending.get(webhookId);
    if (!set) this.pending.set(webhookId, (set = new Set()));
    set.add(messageId);
    if (!this.lanes.has(webhookId)) this.lanes.set(webhookId, this.lane(webhookId));
  }

  /** Until every lane is idle, lanes started meanwhile included. */
  async idle(): Promise<void> {
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()]);
  }

  /** The lanes running now. */
  async running(): Promise<void> {
    await Promise.all([...this.lanes.values()]);
  }

  private async lane(webhookId: number): Promise<void> {
    // Starts after the caller has registered it.
    await Promise.resolve();
    try {
      for (;;) {
        const set = this.pending.get(webhookId);
        const messageId = set?.values().next().value;
        if (this.stopped() || !set || messageId === undefined) break;
        set.delete(messageId);
        await this.acquire();
        try {
          await this.send(webhookId, messageId);
        } finally {
          this.release();
        }
      }
    } finally {
      this.pending.delete(webhookId);
      this.lanes.delete(webhookId);
    }
  }

  private acquire(): Promise<void> {
    if (this.sending < this.limit) {
      this.sending++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.slots.push(resolve));
  }

  private release(): void {
    const next = this.slots.shift();
    if (next) next();
    else this.sending--;
  }
}
