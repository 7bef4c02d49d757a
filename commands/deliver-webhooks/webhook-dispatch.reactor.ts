/**
 * Live webhook deliveries (docs/webhooks.md, "Live deliveries"): decides from the log what each
 * active webhook is owed, queues it as `WebhookMessageQueued` in the webhook's stream, and
 * delivers what is owed and due with `deliverMessage`.
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
import type { Clock } from '../../src/core/clock.js';
import type { BusMessage, BusSubscription, EventBus } from '../../src/core/event-bus.port.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import { defineCollection, type ReadStore } from '../../src/core/read-store.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import {
  divergenceFlagEvent,
  scoreMoveEvent,
  type DivergenceFlagEvent,
  type ScoreMoveEvent,
  type WebhookEventType,
} from '../../src/domain/webhooks/webhook-envelope.js';
import { scoreAt } from '../../projections/shared/columns.js';
import { dailyScores } from '../../projections/daily-scores/daily-scores.projection.js';
import { divergenceDays, divergenceEvents, scoredCells, scoreMoves } from '../../projections/divergence/divergence.projection.js';
import { webhookRetries, webhooks, type WebhookDoc } from '../../projections/webhooks/webhooks.projection.js';
import { deliverMessage, queueMessage } from '../manage-webhooks/webhooks.handler.js';
import { isEmpty, planMessages, publicationsOf, type Publications } from './webhook-dispatch.decider.js';

/** The reactor's checkpoint: the last event it decided on (null: the beginning of the log). */
export interface WebhookDispatchCheckpoint {
  id: 'dispatch';
  position: string | null;
}

export const webhookDispatchCheckpoint = defineCollection<WebhookDispatchCheckpoint>({
  name: 'webhook_dispatch',
  key: (d) => d.id,
  fields: [],
  indexes: [],
});

/** What the reactor needs of the projector runner. */
export interface DispatchRunner {
  readonly position: string | null;
  onBatch(listener: (events: readonly RecordedEvent[]) => void): () => void;
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
  /** Carries the messages to send (`WEBHOOK_DELIVER_TOPIC`): in-memory, or Kafka shared by the replicas. */
  bus: EventBus;
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
/** The bus topic of the messages to send: `{ webhook_id, message_id }`, keyed by the webhook id. */
export const WEBHOOK_DELIVER_TOPIC = 'scores.webhooks.deliver';
export const WEBHOOK_DISPATCH_GROUP = 'webhook-dispatch';
/** The longest `drain` waits for its published messages to be received. */
export const DRAIN_BUS_WAIT_MS = 5_000;
/** Messages queued by a decision are published in chunks of this many (the first ones go early). */
const PUBLISH_CHUNK = 50;
const READ_CHUNK = 1_000;
const PAGE = 500;
/** Events decided on without anything to send before the checkpoint is saved anyway. */
const SAVE_EVERY = 1_000;
const CHECKPOINT_ID = 'dispatch';

export async function startWebhookDispatcher(options: WebhookDispatcherOptions): Promise<WebhookDispatcher> {
  const { events, reads, runner, clock, sender, bus } = options;
  const transport = options.transportClock ?? clock;
  const group = options.group ?? WEBHOOK_DISPATCH_GROUP;
  const interval = options.intervalMs ?? DEFAULT_DISPATCH_INTERVAL_MS;
  const limit = Math.max(1, options.concurrency ?? DEFAULT_DISPATCH_CONCURRENCY);
  const report = (err: unknown, context: { webhookId?: number; messageId?: string } = {}) => options.onError?.(err, context);
  const deps = { events, clock, transportClock: transport, sender };

  await reads.register([webhookDispatchCheckpoint]);
  const stored = await reads.get(webhookDispatchCheckpoint, CHECKPOINT_ID);

  // ------------------------------------------------------------------------------------------
  // Decisions

  /** The last event decided on, and the last saved. */
  let checkpoint: string | null;
  let saved: string | null;
  let unsaved = 0;
  /** Events up to here are read from the log (what the read models held at the start). */
  let backlogUntil: string | null = null;
  const buffered: (readonly RecordedEvent[])[] = [];
  let stopped = false;
  /** The loop runs (set up below, after the awaits of the start). */
  let started = false;

  // Subscribed and the position read in one synchronous step: every later batch follows it.
  const unsubscribe = runner.onBatch((batch) => {
    buffered.push(batch);
    // Before the loop starts, its first pass takes the batch.
    if (started) wake();
  });
  if (stored) {
    checkpoint = saved = stored.position;
    backlogUntil = runner.position;
  } else {
    checkpoint = runner.position;
    saved = null;
    unsaved = 1;
    // Saved at once: a crash before the first decision must not move the start to a later position.
    await save();
  }

  const after = (e: RecordedEvent) => checkpoint === null || e.position > checkpoint;

  async function save(): Promise<void> {
    if (unsaved === 0 && saved === checkpoint) return;
    const doc: WebhookDispatchCheckpoint = { id: CHECKPOINT_ID, position: checkpoint };
    await reads.commit({ writes: [{ op: 'upsert', collection: webhookDispatchCheckpoint.name, id: CHECKPOINT_ID, doc }], checkpoints: {} });
    saved = checkpoint;
    unsaved = 0;
  }

  async function activeWebhooks(type: WebhookEventType): Promise<WebhookDoc[]> {
    const out: WebhookDoc[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: WebhookDoc[]; nextCursor: string | null } = await reads.find(webhooks, { event_type: type, is_active: true }, { sort: [['id', 1]], limit: PAGE, cursor });
      for (const w of page.items) if (!w.deleted) out.push(w);
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }

  async function scoreMoveEvents(p: Publications): Promise<ScoreMoveEvent[]> {
    if (p.rows.length === 0) return [];
    const moves = await reads.getMany(scoreMoves, p.rows.map((r) => `${r.ticker}|${r.date}`));
    const out: ScoreMoveEvent[] = [];
    for (const r of p.rows) {
      const m = moves.get(`${r.ticker}|${r.date}`);
      if (m) out.push(scoreMoveEvent(m));
    }
    return out;
  }

  async function divergenceEventsOf(p: Publications): Promise<DivergenceFlagEvent[]> {
    const out: DivergenceFlagEvent[] = [];
    for (const date of [...p.published_dates].sort()) {
      const flagged = (await reads.find(divergenceEvents, { flag_date: date }, { sort: [['ticker', 1]] })).items;
      if (flagged.length === 0) continue;
      const [day, scores] = await Promise.all([reads.get(divergenceDays, date), reads.get(dailyScores, date)]);
      if (!day || !scores) continue;
      const cells = scoredCells(day, scores);
      for (const e of flagged) {
        const cell = cells[e.ticker];
        const i = scores.tickers.indexOf(e.ticker);
        if (!cell || i < 0) continue;
        out.push(
          divergenceFlagEvent({
            ticker: e.ticker,
            date,
            direction: e.direction,
            gap: e.flag_gap,
            percentile: cell[1],
            main_street: scoreAt(scores.main_street, i),
            wall_street: scoreAt(scores.wall_street, i),
            service_score: scoreAt(scores.service_score, i),
          }),
        );
      }
    }
    return out;
  }

  /** Decides on a run of consecutive events (all after the checkpoint, all in the read models). */
  async function decideOn(run: readonly RecordedEvent[]): Promise<void> {
    const last = run[run.length - 1]!.position;
    const published = publicationsOf(run);
    if (!isEmpty(published)) {
      const [moves, flags] = await Promise.all([scoreMoveEvents(published), divergenceEventsOf(published)]);
      const types: WebhookEventType[] = [];
      if (moves.length) types.push('score_move');
      if (flags.length) types.push('divergence_event');
      const hooks = (await Promise.all(types.map(activeWebhooks))).flat();
      const planned = planMessages(hooks, { score_move: moves, divergence_event: flags }, last, transport.now());
      let queued: Due[] = [];
      await eachLimited(planned, limit, async (m) => {
        const id = await queueMessage(deps, m.webhook_id, m.envelope, { messageId: m.message_id, onlyNewEvents: true });
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
    checkpoint = last;
    unsaved += run.length;
    if (!isEmpty(published) || unsaved >= SAVE_EVERY) await save();
  }

  async function decide(): Promise<void> {
    while (!stopped && backlogUntil !== null && (checkpoint === null || checkpoint < backlogUntil)) {
      const until = backlogUntil;
      const run = (await events.readAll({ after: checkpoint, maxCount: READ_CHUNK })).filter((e) => e.position <= until);
      if (run.length === 0) break;
      await decideOn(run);
    }
    backlogUntil = null;
    while (!stopped && buffered.length > 0) {
      const run = buffered[0]!.filter(after);
      if (run.length > 0) await decideOn(run);
      buffered.shift();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Sending: published on the bus; received messages go to one lane per webhook, `limit` sends
  // at once over all lanes of this process.

  /** While a `drain` runs: the copies it waits for, by `webhookId|messageId`. */
  let awaited: Map<string, number> | null = null;
  let drains = 0;
  const received = (key: string): void => {
    const map = awaited;
    const n = map?.get(key);
    if (!map || n === undefined) return;
    if (n <= 1) map.delete(key);
    else map.set(key, n - 1);
  };

  /** Publishes messages to send; a failure is reported (the timer publishes them again when due). */
  async function publish(due: readonly Due[]): Promise<void> {
    if (due.length === 0) return;
    const messages: BusMessage[] = due.map((d) => ({ key: String(d.webhook_id), value: JSON.stringify({ webhook_id: d.webhook_id, message_id: d.message_id }) }));
    const map = awaited;
    if (map) for (const d of due) map.set(dueKey(d), (map.get(dueKey(d)) ?? 0) + 1);
    try {
      await bus.publish(WEBHOOK_DELIVER_TOPIC, messages);
    } catch (err) {
      // Nothing to wait for.
      if (map) for (const d of due) received(dueKey(d));
      report(err, {});
    }
  }

  const pending = new Map<number, Set<string>>();
  const lanes = new Map<number, Promise<void>>();
  let sending = 0;
  const slots: (() => void)[] = [];
  const acquire = (): Promise<void> => {
    if (sending < limit) {
      sending++;
      return Promise.resolve();
    }
    return new Promise((resolve) => slots.push(resolve));
  };
  const release = () => {
    const next = slots.shift();
    if (next) next();
    else sending--;
  };

  function hand(webhookId: number, messageId: string): void {
    if (stopped) return;
    let set = pending.get(webhookId);
    if (!set) pending.set(webhookId, (set = new Set()));
    set.add(messageId);
    if (!lanes.has(webhookId)) lanes.set(webhookId, lane(webhookId));
  }

  async function lane(webhookId: number): Promise<void> {
    // Starts after the caller has registered it.
    await Promise.resolve();
    try {
      for (;;) {
        const set = pending.get(webhookId);
        const messageId = set?.values().next().value;
        if (stopped || !set || messageId === undefined) break;
        set.delete(messageId);
        await acquire();
        try {
          await deliverMessage(deps, webhookId, messageId);
        } catch (err) {
          report(err, { webhookId, messageId });
        } finally {
          release();
        }
      }
    } finally {
      pending.delete(webhookId);
      lanes.delete(webhookId);
    }
  }

  // Every dispatcher of this process on this bus hears of a message received by any of them (`drain`).
  let peers = receivers.get(bus);
  if (!peers) receivers.set(bus, (peers = new Set()));
  peers.add(received);
  let subscription: BusSubscription;
  try {
    subscription = await bus.subscribe({
      topic: WEBHOOK_DELIVER_TOPIC,
      group,
      // Hands over and returns at once: the lanes keep different webhooks concurrent.
      handler: async (message) => {
        const due = parseDue(message.value);
        if (!due) {
          report(new Error(`not a webhook delivery message: ${message.value.slice(0, 200)}`), {});
          return;
        }
        for (const peer of receivers.get(bus) ?? []) peer(dueKey(due));
        hand(due.webhook_id, due.message_id);
      },
    });
  } catch (err) {
    peers.delete(received);
    unsubscribe();
    throw err;
  }

  /** Publishes every message `webhook_retries` says is due by the transport clock. */
  async function handDue(): Promise<void> {
    const now = transport.now().toISOString();
    let cursor: string | null = null;
    do {
      const page: { items: { webhook_id: number; message_id: string }[]; nextCursor: string | null } = await reads.find(
        webhookRetries,
        { next_attempt_at: { $lte: now } },
        { sort: [['next_attempt_at', 1]], limit: PAGE, cursor },
      );
      await publish(page.items.map((r) => ({ webhook_id: r.webhook_id, message_id: r.message_id })));
      cursor = page.nextCursor;
    } while (cursor && !stopped);
  }

  // ------------------------------------------------------------------------------------------
  // The loop: decisions one pass at a time; a wake during a pass runs one more after it.

  let chain: Promise<void> = Promise.resolve();
  let queuedPass: Promise<void> | null = null;
  function pass(withDue: boolean): Promise<void> {
    if (queuedPass && !withDue) return queuedPass;
    const run = chain.then(async () => {
      if (queuedPass === run) queuedPass = null;
      if (stopped) return;
      try {
        await decide();
      } catch (err) {
        report(err, {});
      }
      if (withDue) {
        try {
          await handDue();
        } catch (err) {
          report(err, {});
        }
      }
    });
    queuedPass = withDue ? null : run;
    chain = run;
    return run;
  }
  function wake(): void {
    void pass(false);
  }

  let timer: NodeJS.Timeout | null = null;
  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void pass(true).finally(schedule);
    }, interval);
    // The dispatcher alone never keeps the process alive.
    timer.unref();
  }

  started = true;
  void pass(true);
  schedule();

  return {
    async drain() {
      drains++;
      const waiting = (awaited ??= new Map());
      try {
        await pass(true);
        const deadline = Date.now() + DRAIN_BUS_WAIT_MS;
        while (waiting.size > 0 && !stopped && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      } finally {
        if (--drains === 0) awaited = null;
      }
      while (lanes.size > 0) await Promise.all([...lanes.values()]);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      if (timer) clearTimeout(timer);
      timer = null;
      await chain;
      try {
        await subscription.stop();
      } catch (err) {
        report(err, {});
      }
      receivers.get(bus)?.delete(received);
      await Promise.all([...lanes.values()]);
      try {
        await save();
      } catch (err) {
        report(err, {});
      }
    },
  };
}

/** A message to send. */
interface Due {
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

/** Per bus: the dispatchers of this process listening on it (each `drain` counts what it awaits). */
const receivers = new WeakMap<EventBus, Set<(key: string) => void>>();

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
