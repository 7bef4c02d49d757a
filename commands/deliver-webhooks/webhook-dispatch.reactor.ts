/**
 * Live webhook deliveries (docs/webhooks.md, "Live deliveries"): decides from the log what each
 * active webhook is owed, queues it as `WebhookMessageQueued` in the webhook's stream, and
 * delivers what is owed and due with `deliverMessage`. This file starts and stops the parts, each
 * in its own file: the decision loop (`decision-loop.ts`, with `dispatch-checkpoint.ts`,
 * `published-events.reader.ts` and `webhook-messages.planner.ts`), the bus (`delivery-bus.ts`),
 * the send lanes (`send-lanes.ts`), the passes and the timer (`dispatch-passes.ts`), and the
 * command side (`webhook-delivery.handler.ts`, `attempt-recording.handler.ts`).
 *
 * Decisions. The reactor follows the log behind the read models: after the projector runner
 * commits a batch (`onBatch`), it looks at the batch's score events (`publicationsOf`) and reads
 * what they published from the read models, which hold the batch by then:
 * - `score_move`: each (ticker, date) published or restated in the batch that has a `score_moves`
 *   document now (|Δ service_score| ≥ 10);
 * - `divergence_event`: each divergence event flagged on a date the batch published scores for.
 * Each active webhook of the type gets one message for the batch with all of them. The message
 * id is derived from (webhook id, the batch's last position) (`dispatchMessageId`), and the queue
 * command leaves out the events the webhook was queued before (same type, ticker and date), both
 * decided on the webhook's own stream: so a batch decided twice queues nothing twice, and a
 * (ticker, date) restated later is not sent again.
 *
 * Checkpoint. The reactor keeps the position of the last event it decided on in the read store
 * (`webhook_dispatch`, one document), saved after the messages of a batch with score events are
 * queued (and every 1,000 other events, and at stop). On start it first decides on the log from
 * that position up to what the read models hold (`readAll`), then on each batch the runner commits
 * after it subscribed; a crash between queueing and saving decides those events again, which the
 * two rules above make harmless. So a restart neither skips nor repeats a decision. Its very first
 * start (no document) begins at the read models' position: the history already in the log is not
 * sent. The checkpoint is not a projection's: a replay of the read models keeps it, so a replay
 * sends nothing again. Decisions read the read models as they are now, not as they were at the
 * batch: after downtime a move restated away meanwhile is not sent, and a webhook registered
 * meanwhile receives what was published while the reactor was stopped.
 *
 * Sending goes through the bus (`WEBHOOK_DELIVER_TOPIC`, consumer group `WEBHOOK_DISPATCH_GROUP`).
 * A message just queued, and every message a timer (every `intervalMs`, `unref`'d) finds due by
 * the transport clock in `webhook_retries` (a failed attempt's retry, or one queued before a
 * crash), is published as `{ webhook_id, message_id }` keyed by the webhook id: with Kafka all of
 * a webhook's messages land on one partition, hence one consumer of the group at a time, in
 * order, and the replicas share the webhooks; with the in-memory bus the one process receives
 * them all. The bus handler only hands the message to its webhook's lane and returns (both buses
 * run one handler at a time per member): each webhook's messages go one after the other;
 * different webhooks' go concurrently, at most `concurrency` sends at once per process, so one
 * slow receiver holds one slot, not the others. `deliverMessage` reads the webhook's stream before
 * each attempt, so a message published twice (the timer of each replica, a read model behind the
 * log) is sent once.
 * A bus message that fails (malformed, or a publish that failed) is reported and dropped: the
 * message is still owed in `webhook_retries`, and the timer publishes it again.
 */
import { wallClockOf, type Clock } from '../../src/core/clock.js';
import type { EventBus } from '../../src/core/event-bus.port.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import { webhookRetries } from '../../projections/webhooks/webhooks.projection.js';
import { DecisionLoop } from './decision-loop.js';
import { DeliveryBus, DrainReceipts } from './delivery-bus.js';
import { DispatchCheckpoint } from './dispatch-checkpoint.js';
import { DispatchPasses } from './dispatch-passes.js';
import { SendLanes } from './send-lanes.js';
import { deliverMessage, queueMessage } from './webhook-delivery.handler.js';
import { PUBLICATION_EVENT_TYPES } from './webhook-messages.planner.js';

export { webhookDispatchCheckpoint, type WebhookDispatchCheckpoint } from './dispatch-checkpoint.js';
export { DRAIN_BUS_WAIT_MS, DrainReceipts, WEBHOOK_DELIVER_TOPIC } from './delivery-bus.js';

/** What the reactor needs of the projector runner. */
export interface DispatchRunner {
  readonly position: string | null;
  onBatch(listener: (events: readonly RecordedEvent[]) => void): () => void;
  /** Asked for the score events' data before listening (a follower of the log reads only what its listeners need). */
  wantData?(types: readonly string[]): Promise<void>;
}

export interface WebhookDispatcherOptions {
  events: EventStore;
  reads: ReadStore;
  /** Started and caught up: the first start begins at its position. */
  runner: DispatchRunner;
  clock: Clock;
  /**
   * Transport time (src/core/clock.ts): each message's `sent_at`, its signature's timestamp and
   * its retry schedule; the wall clock in the service even when `SCORES_NOW` pins `clock`.
   * Default `clock`.
   */
  transportClock?: Clock;
  sender: WebhookSender;
  /** Opens the webhooks' sealed secrets to sign each attempt. */
  personal: PersonalData;
  /** Carries the messages to send (`WEBHOOK_DELIVER_TOPIC`): in-memory, or Kafka shared by the replicas. */
  bus: EventBus;
  /**
   * Shared by the dispatchers one process starts on one bus, so that a `drain` hears of a message
   * another of them received; default one of its own.
   */
  receipts?: DrainReceipts;
  /** The consumer group of the senders; default `WEBHOOK_DISPATCH_GROUP`. */
  group?: string;
  /** Pause between looks for due messages; default 1 s. */
  intervalMs?: number;
  /** Sends at once in this process, over all webhooks; default 16. */
  concurrency?: number;
  /** A failed decision (tried again on the next batch or tick) or a failed delivery. */
  onError?(err: unknown, context: { webhookId?: number; messageId?: string }): void;
}

export interface WebhookDispatcher {
  /**
   * Decides on what the read models hold, publishes what is due, waits until the bus has handed
   * it to the dispatchers of this process (not beyond `DRAIN_BUS_WAIT_MS`: another process may
   * have taken it), then until every lane of this dispatcher is idle.
   */
  drain(): Promise<void>;
  /** Stops deciding and sending; waits for the decision and the sends in progress; saves the checkpoint. */
  stop(): Promise<void>;
}

export const DEFAULT_DISPATCH_INTERVAL_MS = 1_000;
export const DEFAULT_DISPATCH_CONCURRENCY = 16;
export const WEBHOOK_DISPATCH_GROUP = 'webhook-dispatch';
const PAGE = 500;

export async function startWebhookDispatcher(options: WebhookDispatcherOptions): Promise<WebhookDispatcher> {
  const { events, reads, runner, clock, sender } = options;
  const transport = wallClockOf(options);
  const limit = Math.max(1, options.concurrency ?? DEFAULT_DISPATCH_CONCURRENCY);
  const report = (err: unknown, context: { webhookId?: number; messageId?: string } = {}) => options.onError?.(err, context);
  const deps = { events, clock, transportClock: transport, sender, personal: options.personal };
  const status = { stopped: false };
  const stopped = () => status.stopped;

  const stored = await DispatchCheckpoint.stored(reads);
  const checkpoint = new DispatchCheckpoint(reads);
  const bus = new DeliveryBus(options.bus, options.receipts ?? new DrainReceipts(), (err) => report(err));
  const queue = (m: { webhook_id: number; message_id: string; envelope: Parameters<typeof queueMessage>[2] }) =>
    queueMessage(deps, m.webhook_id, m.envelope, { messageId: m.message_id, onlyNewEvents: true });
  const loop = new DecisionLoop({ events, reads, transport, limit, queue, publish: (due) => bus.publish(due), stopped }, checkpoint);
  /** Set once the start is done: before, the first pass takes the batches. */
  let passes: DispatchPasses | null = null;

  await runner.wantData?.(PUBLICATION_EVENT_TYPES);
  // Subscribed and the position read in one synchronous step: every later batch follows it.
  const unsubscribe = runner.onBatch((batch) => {
    loop.take(batch);
    passes?.wake();
  });
  if (stored) {
    checkpoint.resume(stored.position);
    loop.catchUpTo(runner.position);
  } else {
    await checkpoint.begin(runner.position);
  }

  const lanes = new SendLanes(limit, async (webhookId, messageId) => {
    try {
      await deliverMessage(deps, webhookId, messageId);
    } catch (err) {
      report(err, { webhookId, messageId });
    }
  }, stopped);
  try {
    await bus.subscribe(options.group ?? WEBHOOK_DISPATCH_GROUP, (due) => lanes.hand(due.webhook_id, due.message_id));
  } catch (err) {
    unsubscribe();
    throw err;
  }

  const publishDue = () => publishDueRetries(reads, transport, bus, stopped);
  const started = new DispatchPasses({ decide: () => loop.decide(), publishDue, report: (err) => report(err), stopped }, options.intervalMs ?? DEFAULT_DISPATCH_INTERVAL_MS);
  passes = started;
  void started.pass(true);
  started.schedule();

  return {
    async drain() {
      await bus.handedOver(() => started.pass(true), stopped);
      await lanes.idle();
    },
    async stop() {
      if (status.stopped) return;
      status.stopped = true;
      unsubscribe();
      await started.stop();
      await bus.stop();
      await lanes.running();
      try {
        await checkpoint.save();
      } catch (err) {
        report(err);
      }
    },
  };
}

/**
 * Publishes every message `webhook_retries` says is due by the transport clock (a failed
 * attempt's retry, or one queued before a crash).
 */
async function publishDueRetries(reads: ReadStore, transport: Clock, bus: DeliveryBus, stopped: () => boolean): Promise<void> {
  const now = transport.now().toISOString();
  let cursor: string | null = null;
  do {
    const page: { items: { webhook_id: number; message_id: string }[]; nextCursor: string | null } = await reads.find(
      webhookRetries,
      { next_attempt_at: { $lte: now } },
      { sort: [['next_attempt_at', 1]], limit: PAGE, cursor },
    );
    await bus.publish(page.items.map((r) => ({ webhook_id: r.webhook_id, message_id: r.message_id })));
    cursor = page.nextCursor;
  } while (cursor && !stopped());
}
