import { handleUntilDone } from '../../src/core/bus-redelivery.js';
import type { BusMessage, BusSubscription, EventBus, SubscribeBusOptions } from '../../src/core/event-bus.port.js';

export interface BusErrorContext {
  topic: string;
  group: string;
  message: BusMessage;
}

export interface InMemoryEventBusOptions {
  /** A handler failed; the message is handed again after a pause (src/core/bus-redelivery.ts). */
  onError?(err: unknown, context: BusErrorContext): void;
  /**
   * Messages kept per topic for groups that subscribe later with `fromBeginning` (oldest dropped
   * first), so a long-running process does not keep every message it ever published.
   */
  retention?: number;
}

interface Member {
  handler(message: BusMessage): Promise<void>;
  busy: boolean;
  /** Left the group: a handler retrying a failed message gives it back to the group. */
  stopped: boolean;
  /** The handler currently running for this member, if any. */
  current: Promise<void> | null;
}

interface Group {
  members: Member[];
  /** Messages not yet handed to a member, in publication order. */
  pending: BusMessage[];
  /** Keys with a message being handled: later messages with the same key wait for it. */
  inFlightKeys: Set<string>;
  /** Round-robin pointer into `members`. */
  next: number;
}

interface Topic {
  log: BusMessage[];
  groups: Map<string, Group>;
}

/**
 * The in-process EventBus: the same semantics as the Kafka adapter without a broker.
 *
 * - Each consumer group receives every message published after it first subscribed (and the
 *   retained earlier ones when it subscribes with `fromBeginning`); a group that loses all its
 *   members keeps its place, like a committed offset.
 * - Members of one group take messages round-robin, one message at a time each.
 * - Messages with the same key are handled one after another in publication order (Kafka gives
 *   this by partitioning on the key); messages without a key have no ordering between them.
 * - A handler error is reported through `onError` and the message handed again after a pause
 *   (later messages of its key wait); a member that stops meanwhile leaves it to the group.
 */
export class InMemoryEventBus implements EventBus {
  private readonly topics = new Map<string, Topic>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly retention: number;
  private closed = false;

  constructor(private readonly options: InMemoryEventBusOptions = {}) {
    this.retention = options.retention ?? 10_000;
  }

  publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('event bus is closed'));
    const t = this.topic(topic);
    for (const m of messages) {
      // A copy: a publisher mutating its object afterwards must not change what consumers see.
      const message: BusMessage = { key: m.key, value: m.value, ...(m.headers ? { headers: { ...m.headers } } : {}) };
      t.log.push(message);
      for (const g of t.groups.values()) g.pending.push(message);
    }
    if (t.log.length > this.retention) t.log.splice(0, t.log.length - this.retention);
    for (const [name, g] of t.groups) this.pump(topic, name, g);
    return Promise.resolve();
  }

  subscribe(options: SubscribeBusOptions): Promise<BusSubscription> {
    if (this.closed) return Promise.reject(new Error('event bus is closed'));
    const t = this.topic(options.topic);
    let g = t.groups.get(options.group);
    if (!g) {
      g = { members: [], pending: options.fromBeginning ? [...t.log] : [], inFlightKeys: new Set(), next: 0 };
      t.groups.set(options.group, g);
    }
    const group = g;
    const member: Member = { handler: (m) => options.handler(m), busy: false, stopped: false, current: null };
    group.members.push(member);
    this.pump(options.topic, options.group, group);
    return Promise.resolve({
      stop: async () => {
        if (member.stopped) return;
        member.stopped = true;
        const i = group.members.indexOf(member);
        if (i >= 0) {
          group.members.splice(i, 1);
          if (group.next > i) group.next -= 1;
          if (group.next >= group.members.length) group.next = 0;
        }
        await member.current;
      },
    });
  }

  /** Stops delivering, then waits for the handlers that are running. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.topics.clear();
  }

  private topic(name: string): Topic {
    let t = this.topics.get(name);
    if (!t) {
      t = { log: [], groups: new Map() };
      this.topics.set(name, t);
    }
    return t;
  }

  /** Hands pending messages to idle members while per-key order allows it. */
  private pump(topic: string, groupName: string, g: Group): void {
    if (this.closed) return;
    const blocked = new Set<string>();
    let i = 0;
    while (i < g.pending.length) {
      if (!g.members.some((m) => !m.busy)) return;
      const message = g.pending[i]!;
      const key = message.key;
      if (key !== null && (g.inFlightKeys.has(key) || blocked.has(key))) {
        // An earlier message with this key is running or still waiting: keep the order.
        blocked.add(key);
        i += 1;
        continue;
      }
      g.pending.splice(i, 1);
      this.deliver(topic, groupName, g, this.idleMember(g)!, message);
    }
  }

  private idleMember(g: Group): Member | null {
    const n = g.members.length;
    for (let k = 0; k < n; k++) {
      const idx = (g.next + k) % n;
      const m = g.members[idx]!;
      if (!m.busy) {
        g.next = (idx + 1) % n;
        return m;
      }
    }
    return null;
  }

  private deliver(topic: string, groupName: string, g: Group, member: Member, message: BusMessage): void {
    member.busy = true;
    if (message.key !== null) g.inFlightKeys.add(message.key);
    const run = (async () => {
      // Never run a handler inside `publish`: the publisher resumes first, as with a broker.
      await Promise.resolve();
      try {
        await handleUntilDone(() => member.handler(message), {
          stopped: () => member.stopped || this.closed,
          report: (err) => this.report(err, { topic, group: groupName, message }),
        });
      } catch {
        // MemberStoppedError, the only way out unhandled: first in line again for the group's
        // other members (or a later one).
        g.pending.unshift(message);
      }
    })().finally(() => {
      member.busy = false;
      member.current = null;
      if (message.key !== null) g.inFlightKeys.delete(message.key);
      this.inFlight.delete(run);
      this.pump(topic, groupName, g);
    });
    member.current = run;
    this.inFlight.add(run);
  }

  private report(err: unknown, context: BusErrorContext): void {
    try {
      if (this.options.onError) this.options.onError(err, context);
      else console.error(`event bus: handler failed on ${context.topic} (group ${context.group})`, err);
    } catch {
      // A failing error reporter must not stop delivery either.
    }
  }
}
