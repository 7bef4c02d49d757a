/**
 * The bus side of sending: messages to send go out on `WEBHOOK_DELIVER_TOPIC` as
 * `{ webhook_id, message_id }` keyed by the webhook id, and come back to the consumer group's
 * members. While a `drain` runs, the copies it published are counted until a dispatcher of this
 * process (any sharing its `DrainReceipts`) has received them.
 */
import type { BusMessage, BusSubscription, EventBus } from '../../src/core/event-bus.port.js';

/** The bus topic of the messages to send: `{ webhook_id, message_id }`, keyed by the webhook id. */
export const WEBHOOK_DELIVER_TOPIC = 'scores.webhooks.deliver';
/** The longest `drain` waits for its published messages to be received. */
export const DRAIN_BUS_WAIT_MS = 5_000;

/** A message to send. */
export interface Due {
  webhook_id: number;
  message_id: string;
}

const dueKey = (d: Due) => `${d.webhook_id}|${d.message_id}`;

function parseDue(value: string): Due | null {
  try {
    const v = JSON.parse(value) as Partial<Due> | null;
    if (v && Number.isSafeInteger(v.webhook_id) && typeof v.message_id === 'string' && v.message_id !== '') return { webhook_id: v.webhook_id!, message_id: v.message_id };
  } catch {
    // Not JSON.
  }
  return null;
}

/**
 * The dispatchers of one process on one bus: each hears of a message received by any of them, so
 * a `drain` of one ends when another took its message. Made by whoever starts them together.
 */
export class DrainReceipts {
  private readonly listeners = new Set<(key: string) => void>();
  add(listener: (key: string) => void): void {
    this.listeners.add(listener);
  }
  delete(listener: (key: string) => void): void {
    this.listeners.delete(listener);
  }
  heard(key: string): void {
    for (const listener of this.listeners) listener(key);
  }
}

export class DeliveryBus {
  /** While a `drain` runs: the copies it waits for, by `webhookId|messageId`. */
  private awaited: Map<string, number> | null = null;
  private drains = 0;
  private subscription: BusSubscription | null = null;
  private readonly received = (key: string): void => {
    const map = this.awaited;
    const n = map?.get(key);
    if (!map || n === undefined) return;
    if (n <= 1) map.delete(key);
    else map.set(key, n - 1);
  };

  constructor(
    private readonly bus: EventBus,
    private readonly receipts: DrainReceipts,
    private readonly report: (err: unknown) => void,
  ) {}

  /** Publishes messages to send; a failure is reported (the timer publishes them again when due). */
  async publish(due: readonly Due[]): Promise<void> {
    if (due.length === 0) return;
    const messages: BusMessage[] = due.map((d) => ({ key: String(d.webhook_id), value: JSON.stringify({ webhook_id: d.webhook_id, message_id: d.message_id }) }));
    const map = this.awaited;
    if (map) for (const d of due) map.set(dueKey(d), (map.get(dueKey(d)) ?? 0) + 1);
    try {
      await this.bus.publish(WEBHOOK_DELIVER_TOPIC, messages);
    } catch (err) {
      // Nothing to wait for.
      if (map) for (const d of due) this.received(dueKey(d));
      this.report(err);
    }
  }

  /** Joins `group`; each message received goes to `hand`, which must return at once. */
  async subscribe(group: string, hand: (due: Due) => void): Promise<void> {
    this.receipts.add(this.received);
    try {
      this.subscription = await this.bus.subscribe({
        topic: WEBHOOK_DELIVER_TOPIC,
        group,
        // Hands over and returns at once: the lanes keep different webhooks concurrent.
        handler: async (message) => {
          const due = parseDue(message.value);
          if (!due) {
            this.report(new Error(`not a webhook delivery message: ${message.value.slice(0, 200)}`));
            return;
          }
          this.receipts.heard(dueKey(due));
          hand(due);
        },
      });
    } catch (err) {
      this.receipts.delete(this.received);
      throw err;
    }
  }

  /**
   * Runs `publishing`, then waits until what it published was received in this process (not
   * beyond `DRAIN_BUS_WAIT_MS`) or `stopped()`.
   */
  async handedOver(publishing: () => Promise<void>, stopped: () => boolean): Promise<void> {
    this.drains++;
    const waiting = (this.awaited ??= new Map());
    try {
      await publishing();
      const deadline = Date.now() + DRAIN_BUS_WAIT_MS;
      while (waiting.size > 0 && !stopped() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    } finally {
      if (--this.drains === 0) this.awaited = null;
    }
  }

  /** Leaves the group (a failure is reported) and stops hearing of receipts. */
  async stop(): Promise<void> {
    try {
      await this.subscription?.stop();
    } catch (err) {
      this.report(err);
    }
    this.receipts.delete(this.received);
  }
}
