/**
 * The decision loop: reads the events past the checkpoint (first the backlog from the log up to
 * what the read models held at the start, then each batch the projector runner commits), reads
 * what they published from the read models, plans one message per webhook, queues each through
 * the command handler and publishes what was queued to be sent, then moves the checkpoint.
 */
import type { Clock } from '../../src/core/clock.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { DispatchCheckpoint } from './dispatch-checkpoint.js';
import type { Due } from './delivery-bus.js';
import { activeWebhooks, divergenceEventsOf, scoreMoveEvents } from './published-events.reader.js';
import { isEmpty, planMessages, publicationsOf, type PlannedMessage, type Publications } from './webhook-messages.planner.js';

/** Messages queued by a decision are published in chunks of this many (the first ones go early). */
const PUBLISH_CHUNK = 50;
const READ_CHUNK = 1_000;

export interface DecisionLoopDeps {
  events: EventStore;
  reads: ReadStore;
  /** Transport time: each message's `sent_at`. */
  transport: Clock;
  /** Queues at once, over all webhooks. */
  limit: number;
  /** Queues a planned message; its id, or null when nothing was owed. */
  queue: (message: PlannedMessage) => Promise<string | null>;
  publish: (due: readonly Due[]) => Promise<void>;
  stopped: () => boolean;
}

export class DecisionLoop {
  /** Events up to here are read from the log (what the read models held at the start). */
  private backlogUntil: string | null = null;
  private readonly buffered: (readonly RecordedEvent[])[] = [];

  constructor(
    private readonly deps: DecisionLoopDeps,
    private readonly checkpoint: DispatchCheckpoint,
  ) {}

  /** A batch the runner committed, decided on by the next pass. */
  take(batch: readonly RecordedEvent[]): void {
    this.buffered.push(batch);
  }

  /** The next pass first reads the log up to `position` (what the read models hold). */
  catchUpTo(position: string | null): void {
    this.backlogUntil = position;
  }

  /** One pass: the backlog, then the batches taken. */
  async decide(): Promise<void> {
    const { events, stopped } = this.deps;
    const checkpoint = this.checkpoint;
    while (!stopped() && this.backlogUntil !== null && (checkpoint.position === null || checkpoint.position < this.backlogUntil)) {
      const until = this.backlogUntil;
      const run = (await events.readAll({ after: checkpoint.position, maxCount: READ_CHUNK })).filter((e) => e.position <= until);
      if (run.length === 0) break;
      await this.decideOn(run);
    }
    this.backlogUntil = null;
    while (!stopped() && this.buffered.length > 0) {
      const after = checkpoint.position;
      const run = this.buffered[0]!.filter((e) => after === null || e.position > after);
      if (run.length > 0) await this.decideOn(run);
      this.buffered.shift();
    }
  }

  /** Decides on a run of consecutive events (all after the checkpoint, all in the read models). */
  private async decideOn(run: readonly RecordedEvent[]): Promise<void> {
    const last = run[run.length - 1]!.position;
    const published = publicationsOf(run);
    if (!isEmpty(published)) await this.queueAndPublish(await this.plan(published, last));
    await this.checkpoint.advance(last, run.length, !isEmpty(published));
  }

  /**
   * The webhooks first: the events of a type nobody subscribes to are not read (a fresh demo's
   * history, 2,000 days of divergence flags, cost the fleet's first start seconds for no message).
   */
  private async plan(published: Publications, last: string): Promise<PlannedMessage[]> {
    const { reads, transport } = this.deps;
    const [moveHooks, flagHooks] = await Promise.all((['score_move', 'divergence_event'] as const).map((type) => activeWebhooks(reads, type)));
    const [moves, flags] = await Promise.all([
      moveHooks!.length ? scoreMoveEvents(reads, published) : [],
      flagHooks!.length ? divergenceEventsOf(reads, published) : [],
    ]);
    return planMessages([...moveHooks!, ...flagHooks!], { score_move: moves, divergence_event: flags }, last, transport.now());
  }

  private async queueAndPublish(planned: readonly PlannedMessage[]): Promise<void> {
    const { queue, publish, limit } = this.deps;
    let queued: Due[] = [];
    await eachLimited(planned, limit, async (m) => {
      const id = await queue(m);
      if (!id) return;
      queued.push({ webhook_id: m.webhook_id, message_id: id });
      if (queued.length >= PUBLISH_CHUNK) {
        const chunk = queued;
        queued = [];
        await publish(chunk);
      }
    });
    if (queued.length > 0) await publish(queued);
  }
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
