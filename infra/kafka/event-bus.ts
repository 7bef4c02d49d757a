import { Kafka, Partitioners, logLevel, type Admin, type Consumer, type IHeaders, type Producer } from 'kafkajs';
import { MemberStoppedError, handleUntilDone } from '../../src/core/bus-redelivery.js';
import type { BusMessage, BusSubscription, EventBus, SubscribeBusOptions } from '../../src/core/event-bus.port.js';

export interface KafkaBusErrorContext {
  topic: string;
  group: string;
  message: BusMessage;
}

export interface KafkaEventBusOptions {
  brokers: string[];
  clientId: string;
  /**
   * Begins the name of every topic and consumer group this bus uses (`scores.ingest` is
   * `<prefix>scores.ingest` on the cluster): deployments or test runs sharing a cluster keep apart.
   */
  prefix?: string;
  /** Partitions of the topics this bus creates (consumers of one group share them). */
  partitions?: number;
  /** Replication factor of the topics this bus creates; default: the broker's default. */
  replicationFactor?: number;
  /** A handler failed; the message is handed again after a pause (src/core/bus-redelivery.ts). */
  onError?(err: unknown, context: KafkaBusErrorContext): void;
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  /** Consumer tuning; kafkajs defaults when absent. */
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  maxWaitTimeMs?: number;
}

const LOG_LEVELS = {
  nothing: logLevel.NOTHING,
  error: logLevel.ERROR,
  warn: logLevel.WARN,
  info: logLevel.INFO,
  debug: logLevel.DEBUG,
} as const;

/**
 * EventBus over Kafka (kafkajs).
 *
 * - Publishing uses an idempotent producer (acks from all in-sync replicas, one request in flight,
 *   so retries neither duplicate nor reorder); the key picks the partition, hence per-key order.
 * - A subscription is a consumer in the group `group`. Each message's offset is committed after
 *   its handler succeeded: at-least-once delivery (a crash mid-handler means the message comes
 *   again). A failed handler runs again, heartbeating meanwhile; a consumer stopped first leaves
 *   the offset uncommitted, so the partition's next owner gets the message.
 * - A new group that is not `fromBeginning` is pinned to the end of the topic before it joins, so
 *   "only messages published after `subscribe` resolved" holds without a race on the first fetch.
 * - Topics are created when missing (`partitions`, `replicationFactor`).
 */
export class KafkaEventBus implements EventBus {
  private readonly kafka: Kafka;
  private admin: Promise<Admin> | null = null;
  private producer: Promise<Producer> | null = null;
  private readonly topics = new Map<string, Promise<void>>();
  private readonly consumers = new Set<Consumer>();
  private closed = false;

  constructor(private readonly options: KafkaEventBusOptions) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: LOG_LEVELS[options.logLevel ?? 'warn'],
    });
  }

  async publish(name: string, messages: BusMessage[]): Promise<void> {
    if (this.closed) throw new Error('event bus is closed');
    if (messages.length === 0) return;
    const topic = this.named(name);
    await this.ensureTopic(topic);
    const producer = await this.getProducer();
    await producer.send({
      topic,
      acks: -1,
      messages: messages.map((m) => ({ key: m.key, value: m.value, ...(m.headers ? { headers: { ...m.headers } } : {}) })),
    });
  }

  async subscribe(options: SubscribeBusOptions): Promise<BusSubscription> {
    if (this.closed) throw new Error('event bus is closed');
    const topic = this.named(options.topic);
    const group = this.named(options.group);
    await this.ensureTopic(topic);
    if (!options.fromBeginning) await this.pinNewGroupToEnd(group, topic);
    const consumer = this.kafka.consumer({
      groupId: group,
      ...(this.options.sessionTimeoutMs !== undefined ? { sessionTimeout: this.options.sessionTimeoutMs } : {}),
      ...(this.options.heartbeatIntervalMs !== undefined ? { heartbeatInterval: this.options.heartbeatIntervalMs } : {}),
      ...(this.options.maxWaitTimeMs !== undefined ? { maxWaitTimeInMs: this.options.maxWaitTimeMs } : {}),
    });
    this.consumers.add(consumer);
    let stopped = false;
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: options.fromBeginning ?? false });
      // Resolves once the consumer has joined the group and holds its partitions.
      await consumer.run({
        autoCommit: false,
        eachMessage: async (payload) => {
          const { topic: t, partition, message } = payload;
          const busMessage: BusMessage = {
            key: message.key ? message.key.toString('utf8') : null,
            value: message.value ? message.value.toString('utf8') : '',
            ...decodeHeaders(message.headers),
          };
          try {
            await handleUntilDone(() => options.handler(busMessage), {
              stopped: () => stopped || this.closed,
              report: (err) => this.report(err, { topic: t, group, message: busMessage }),
              pausing: () => payload.heartbeat(),
            });
          } catch (err) {
            // Stopping: the consumer leaves the group with the offset uncommitted (autoCommit is
            // off), so the partition's next owner reads the message again.
            if (err instanceof MemberStoppedError) return;
            throw err;
          }
          await consumer.commitOffsets([{ topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
        },
      });
    } catch (err) {
      this.consumers.delete(consumer);
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    return {
      stop: async () => {
        if (stopped) return;
        stopped = true;
        this.consumers.delete(consumer);
        // Waits for the running handler, then leaves the group.
        await consumer.disconnect();
      },
    };
  }

  /** Disconnects every consumer (after their running handlers), the producer and the admin client. */
  async close(): Promise<void> {
    this.closed = true;
    const consumers = [...this.consumers];
    this.consumers.clear();
    await Promise.allSettled(consumers.map((c) => c.disconnect()));
    const producer = this.producer;
    const admin = this.admin;
    this.producer = null;
    this.admin = null;
    await Promise.allSettled([producer?.then((p) => p.disconnect()), admin?.then((a) => a.disconnect())]);
  }

  /** Deletes topics (test teardown). */
  async deleteTopics(names: string[]): Promise<void> {
    const topics = names.map((n) => this.named(n));
    const admin = await this.getAdmin();
    await admin.deleteTopics({ topics });
    for (const t of topics) this.topics.delete(t);
  }

  /** A topic's or group's name on the cluster. */
  private named(name: string): string {
    return `${this.options.prefix ?? ''}${name}`;
  }

  private ensureTopic(topic: string): Promise<void> {
    let ready = this.topics.get(topic);
    if (!ready) {
      ready = this.getAdmin().then(async (admin) => {
        // Resolves false when it existed already: fine. Leaders are awaited by `waitForLeaders`
        // below, not kafkajs's, which gives up on what a KRaft broker answers for a new topic.
        await admin.createTopics({
          waitForLeaders: false,
          topics: [
            {
              topic,
              numPartitions: this.options.partitions ?? 3,
              replicationFactor: this.options.replicationFactor ?? -1,
            },
          ],
        });
        await waitForLeaders(admin, topic);
      });
      ready.catch(() => this.topics.delete(topic));
      this.topics.set(topic, ready);
    }
    return ready;
  }

  /**
   * A group with no committed offset would otherwise pick "latest" at its first fetch, after
   * `subscribe` resolved: a message published in between would be lost. Commit the current end
   * of every partition for it now. Only possible while the group has no member; when another
   * member got there first, the group already has its place.
   */
  private async pinNewGroupToEnd(group: string, topic: string): Promise<void> {
    const admin = await this.getAdmin();
    const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    if (!offsets || offsets.partitions.some((p) => p.offset !== '-1')) return;
    try {
      await admin.resetOffsets({ groupId: group, topic, earliest: false });
    } catch {
      // The group became active meanwhile: its members fixed the offsets.
    }
  }

  private getAdmin(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })();
    this.admin.catch(() => {
      this.admin = null;
    });
    return this.admin;
  }

  private getProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      return producer;
    })();
    this.producer.catch(() => {
      this.producer = null;
    });
    return this.producer;
  }

  private report(err: unknown, context: KafkaBusErrorContext): void {
    try {
      if (this.options.onError) this.options.onError(err, context);
      else console.error(`event bus: handler failed on ${context.topic} (group ${context.group})`, err);
    } catch {
      // A failing error reporter must not stop the consumer.
    }
  }
}

/**
 * Waits until every partition of a topic has a leader. kafkajs's own `waitForLeaders` retries
 * only LEADER_NOT_AVAILABLE, but a KRaft broker may answer UNKNOWN_TOPIC_OR_PARTITION for a topic
 * its controller has just created (seen on Kafka 4.3 under load): both mean "not yet".
 */
async function waitForLeaders(admin: Admin, topic: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      const partitions = topics[0]?.partitions ?? [];
      if (partitions.length > 0 && partitions.every((p) => p.leader >= 0)) return;
    } catch (err) {
      // kafkajs retries LEADER_NOT_AVAILABLE itself and may then wrap it, the type in its cause.
      const e = err as { type?: string; cause?: { type?: string } };
      const type = e.type ?? e.cause?.type;
      if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE') throw err;
    }
    if (Date.now() > deadline) throw new Error(`topic ${topic} has no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function decodeHeaders(headers: IHeaders | undefined): { headers?: Record<string, string> } {
  if (!headers) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) out[k] = first.toString();
  }
  return Object.keys(out).length > 0 ? { headers: out } : {};
}
