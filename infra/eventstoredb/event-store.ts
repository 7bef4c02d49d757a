import { randomUUID } from 'node:crypto';
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type AppendExpectedRevision,
  type JSONType,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { ConcurrencyError } from '../../src/core/errors.js';
import { plainEncoding } from '../../src/core/event-store.port.js';
import type {
  EventCodec,
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
} from '../../src/core/event-store.port.js';

const WIDTH = 20;

/** `commit:prepare`, each zero-padded to 20 digits, so that string order is log order. */
export function encodePosition(p: Position): string {
  return `${p.commit.toString().padStart(WIDTH, '0')}:${p.prepare.toString().padStart(WIDTH, '0')}`;
}

export function decodePosition(s: string): Position {
  const m = /^(\d{1,20}):(\d{1,20})$/.exec(s);
  if (!m) throw new Error(`not an EventStoreDB position: ${s}`);
  return { commit: BigInt(m[1]!), prepare: BigInt(m[2]!) };
}

export interface EventStoreDbOptions {
  /** Events read per round trip when scanning $all (readAll, headPosition). */
  pageSize?: number;
  /** Called when a subscription lost its connection and is about to resubscribe. */
  onReconnect?(err: unknown, attempt: number): void;
  /** Upper bound of the wait between resubscription attempts. */
  maxReconnectDelayMs?: number;
  /** How event data is stored (default: as given). */
  codec?: EventCodec;
}

type Recordable = ResolvedEvent | AllStreamResolvedEvent;

/** A handler's own failure: stops the subscription instead of resubscribing. */
class HandlerFailed extends Error {
  constructor(readonly failure: unknown) {
    super('subscription handler failed');
  }
}

/** The gRPC stream ended without being asked to. */
class SubscriptionEnded extends Error {
  constructor() {
    super('EventStoreDB subscription ended');
  }
}

const TRANSIENT = new Set(['unavailable', 'deadline-exceeded', 'timeout', 'cancelled', 'not-leader', 'unknown']);

function isTransient(err: unknown): boolean {
  if (err instanceof SubscriptionEnded) return true;
  const type = (err as { type?: unknown } | null)?.type;
  return typeof type === 'string' && TRANSIENT.has(type);
}

/** System records (`$`-prefixed types or streams): stream metadata, stats, projections, links. */
function isSystem(e: { type: string; streamId: string }): boolean {
  return e.type.startsWith('$') || e.streamId.startsWith('$');
}

function toEsdbRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

/**
 * EventStore over EventStoreDB / KurrentDB (`@eventstore/db-client`).
 *
 * - Positions are the server's (commit, prepare) pair, encoded by `encodePosition`.
 * - System events (`$`-prefixed) are never returned: they are the server's bookkeeping.
 * - `appendMany` is NOT atomic across streams: EventStoreDB has no multi-stream transaction.
 *   Conditions are checked first, then streams are appended in order, each atomically; a failure
 *   leaves the earlier ones written, and a lease fence has a window (docs/scaling.md).
 * - Subscriptions resubscribe by themselves after a transient failure (the client's catch-up
 *   subscriptions do not), from the last position they delivered.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly client: EventStoreDBClient;
  private readonly ownsClient: boolean;
  private readonly pageSize: number;
  private readonly codec: EventCodec;
  private readonly subscriptions = new Set<Subscription>();

  constructor(
    clientOrUrl: EventStoreDBClient | string,
    private readonly options: EventStoreDbOptions = {},
  ) {
    this.ownsClient = typeof clientOrUrl === 'string';
    this.client = typeof clientOrUrl === 'string' ? EventStoreDBClient.connectionString(clientOrUrl) : clientOrUrl;
    this.pageSize = options.pageSize ?? 500;
    this.codec = options.codec ?? plainEncoding;
  }

  async append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision = 'any'): Promise<AppendResult> {
    const payload = events.map((e) =>
      jsonEvent({
        id: e.id ?? randomUUID(),
        type: e.type,
        // The client types JSON data as object | array | string; any JSON value round-trips.
        data: this.codec.encode(e.type, e.data) as JSONType,
        metadata: e.metadata ?? {},
      }),
    );
    let result;
    try {
      result = await this.client.appendToStream(streamId, payload, { expectedRevision: toEsdbRevision(expectedRevision) });
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        const actual = err.actualVersion;
        throw new ConcurrencyError(streamId, expectedRevision, typeof actual === 'bigint' ? Number(actual) : null);
      }
      throw err;
    }
    const nextExpectedRevision = Number(result.nextExpectedRevision);
    // For one event the append's position is the event's. For several, the server reports the
    // write as a whole: read the last event back so that `position` is exactly its position
    // (projector runners wait for it).
    let position = events.length === 1 && result.position ? encodePosition(result.position) : null;
    if (position === null && nextExpectedRevision >= 0) {
      const [last] = await this.readStreamRaw(streamId, {
        fromRevision: BigInt(nextExpectedRevision),
        maxCount: 1,
        direction: BACKWARDS,
      });
      position = last?.position ?? (result.position ? encodePosition(result.position) : '');
    }
    return { nextExpectedRevision, position: position ?? '' };
  }

  /**
   * Appends stream by stream, in order, after checking the conditions (appends without events:
   * the server checks an empty append's expected revision). Not atomic across streams (see the
   * class comment): a condition's stream may move between its check and the appends that follow.
   */
  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    const results: AppendResult[] = new Array<AppendResult>(appends.length);
    const order = appends.map((a, i) => ({ a, i, condition: a.events.length === 0 }));
    for (const { a, i } of [...order.filter((o) => o.condition), ...order.filter((o) => !o.condition)]) {
      results[i] = await this.append(a.streamId, a.events, a.expectedRevision ?? 'any');
    }
    return results;
  }

  readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    return this.readStreamRaw(streamId, {
      fromRevision: options.fromRevision === undefined ? undefined : BigInt(options.fromRevision),
      maxCount: options.maxCount,
      direction: FORWARDS,
    });
  }

  private async readStreamRaw(
    streamId: string,
    o: { fromRevision?: bigint | undefined; maxCount?: number | undefined; direction: typeof FORWARDS | typeof BACKWARDS },
  ): Promise<RecordedEvent[]> {
    if (o.maxCount === 0) return [];
    const out: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(streamId, {
        direction: o.direction,
        fromRevision: o.fromRevision ?? (o.direction === FORWARDS ? START : END),
        ...(o.maxCount !== undefined ? { maxCount: BigInt(o.maxCount) } : {}),
      });
      for await (const resolved of read) {
        const rec = toRecorded(resolved, this.codec);
        if (rec) out.push(rec);
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const max = options.maxCount ?? 1000;
    const out: RecordedEvent[] = [];
    if (max <= 0) return out;
    // Reading $all from a position includes the event at it; `after` is exclusive.
    let after = options.after ?? null;
    let from: ReadPosition = after ? decodePosition(after) : START;
    for (;;) {
      const page = Math.min(Math.max(max - out.length + 1, 32), this.pageSize * 10);
      let seen = 0;
      let last: string | null = null;
      for await (const resolved of this.client.readAll({ fromPosition: from, maxCount: BigInt(page), direction: FORWARDS })) {
        seen += 1;
        const e = resolved.event;
        if (!e) continue;
        const position = encodePosition(e.position);
        last = position;
        if ((after !== null && position <= after) || isSystem(e) || out.length >= max) continue;
        const rec = toRecorded(resolved, this.codec);
        if (rec) out.push(rec);
      }
      if (out.length >= max || seen < page || last === null) return out;
      after = last;
      from = decodePosition(last);
    }
  }

  async headPosition(): Promise<string | null> {
    // Walk $all backwards past the server's own trailing records.
    let from: ReadPosition = END;
    let seenFrom: string | null = null;
    for (;;) {
      const page = 64;
      let seen = 0;
      let fresh = 0;
      let oldest: Position | null = null;
      const read = this.client.readAll({ fromPosition: from, maxCount: BigInt(page), direction: BACKWARDS });
      for await (const resolved of read) {
        seen += 1;
        const e: AllStreamResolvedEvent['event'] = resolved.event;
        if (!e) continue;
        const position = encodePosition(e.position);
        if (seenFrom !== null && position >= seenFrom) continue;
        fresh += 1;
        if (!isSystem(e)) return position;
        oldest = e.position;
      }
      if (seen < page || fresh === 0 || oldest === null) return null;
      from = oldest;
      seenFrom = encodePosition(oldest);
    }
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    const maxBatch = options.maxBatch ?? 200;
    const maxDelay = this.options.maxReconnectDelayMs ?? 5000;
    const state = {
      stopped: false,
      after: options.after ?? null,
      /** The last non-system position when the subscription started (null: empty log). */
      target: undefined as string | null | undefined,
      caughtUp: false,
      current: null as AllStreamSubscription | null,
      wake: null as (() => void) | null,
    };
    const markCaughtUp = () => {
      if (state.caughtUp) return;
      state.caughtUp = true;
      options.onCaughtUp?.();
    };
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          state.wake = null;
          resolve();
        }
        state.wake = done;
      });

    const loop = async () => {
      let attempt = 0;
      while (!state.stopped) {
        try {
          if (state.target === undefined) {
            state.target = await this.headPosition();
            if (state.target === null || (state.after !== null && state.after >= state.target)) markCaughtUp();
          }
          await this.follow(state, maxBatch, options, markCaughtUp, () => {
            attempt = 0;
          });
        } catch (err) {
          if (state.stopped) return;
          if (err instanceof HandlerFailed) throw err.failure;
          if (!isTransient(err)) throw err;
          attempt += 1;
          this.options.onReconnect?.(err, attempt);
          await pause(Math.min(100 * 2 ** Math.min(attempt, 10), maxDelay));
        }
      }
    };

    const running = loop().catch((err: unknown) => {
      state.stopped = true;
      options.onError?.(err);
    });
    const subscription: Subscription = {
      stop: async () => {
        state.stopped = true;
        state.wake?.();
        await running;
        this.subscriptions.delete(subscription);
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * One server subscription, from `state.after`, until it fails, ends or is stopped. Reads what
   * the client has buffered (at most `maxBatch`), awaits the handler, then reads again: the
   * readable stream's buffer applies backpressure to the gRPC stream while a batch runs.
   */
  private async follow(
    state: FollowState,
    maxBatch: number,
    options: SubscribeOptions,
    markCaughtUp: () => void,
    onProgress: () => void,
  ): Promise<void> {
    const sub = this.client.subscribeToAll(
      { fromPosition: state.after ? decodePosition(state.after) : START, filter: excludeSystemEvents() },
      { highWaterMark: maxBatch },
    );
    state.current = sub;
    const signals = watch(sub);
    state.wake = signals.poke;
    try {
      while (!state.stopped) {
        const batch = this.readBatch(sub, maxBatch, state.after);
        if (batch.length > 0) {
          try {
            await options.onEvents(batch);
          } catch (err) {
            throw new HandlerFailed(err);
          }
          state.after = batch[batch.length - 1]!.position;
          onProgress();
        }
        const reachedTarget = state.target != null && state.after !== null && state.after >= state.target;
        if (!state.caughtUp && (reachedTarget || (signals.status.serverCaughtUp && sub.readableLength === 0))) markCaughtUp();
        if (batch.length > 0) continue;
        if (state.stopped) break;
        if (signals.status.failure) throw signals.status.failure;
        if (signals.status.ended) throw new SubscriptionEnded();
        await signals.next();
      }
    } finally {
      state.wake = null;
      state.current = null;
      sub.removeAllListeners('readable');
      await sub.unsubscribe().catch(() => undefined);
    }
  }

  /** What the client has buffered, at most `maxBatch` events, without system events or those at or before `after`. */
  private readBatch(sub: AllStreamSubscription, maxBatch: number, after: string | null): RecordedEvent[] {
    const batch: RecordedEvent[] = [];
    let resolved: AllStreamResolvedEvent | null;
    while (batch.length < maxBatch && (resolved = sub.read() as AllStreamResolvedEvent | null) !== null) {
      const e = resolved.event;
      if (!e || isSystem(e)) continue;
      const rec = toRecorded(resolved, this.codec);
      // After a resubscription the server may repeat the last delivered event.
      if (!rec || (after !== null && rec.position <= after)) continue;
      batch.push(rec);
    }
    return batch;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.stop()));
    if (this.ownsClient) await this.client.dispose();
  }
}

/** What a subscription's loop and `follow` share (see subscribeToAll). */
interface FollowState {
  stopped: boolean;
  after: string | null;
  target: string | null | undefined;
  caughtUp: boolean;
  current: AllStreamSubscription | null;
  wake: (() => void) | null;
}

/** A server subscription as the loop of `follow` sees it. */
interface Signals {
  /** Written by the stream's listeners, read by the loop. */
  status: { failure: Error | null; ended: boolean; serverCaughtUp: boolean };
  /** Wakes the loop waiting in `next()`. */
  poke: () => void;
  /** Resolves at the stream's next event, error, end or caught-up signal (or `poke`). */
  next: () => Promise<void>;
}

function watch(sub: AllStreamSubscription): Signals {
  const status: Signals['status'] = { failure: null, ended: false, serverCaughtUp: false };
  let notify: (() => void) | null = null;
  const poke = () => {
    const n = notify;
    notify = null;
    n?.();
  };
  // Attached at once: an 'error' without a listener would crash the process.
  sub.on('error', (err) => {
    status.failure ??= err;
    poke();
  });
  sub.on('end', () => {
    status.ended = true;
    poke();
  });
  sub.on('close', () => {
    status.ended = true;
    poke();
  });
  sub.on('readable', poke);
  sub.on('caughtUp', () => {
    status.serverCaughtUp = true;
    poke();
  });
  const next = () =>
    new Promise<void>((resolve) => {
      notify = resolve;
    });
  return { status, poke, next };
}

function toRecorded(resolved: Recordable, codec: EventCodec): RecordedEvent | null {
  const e = resolved.event;
  if (!e) return null;
  const position: Position | undefined =
    e.position ??
    (resolved.commitPosition !== undefined ? { commit: resolved.commitPosition, prepare: resolved.commitPosition } : undefined);
  const metadata = e.metadata;
  return {
    id: e.id,
    streamId: e.streamId,
    type: e.type,
    data: codec.decode(e.type, e.data),
    metadata:
      metadata && typeof metadata === 'object' && !Array.isArray(metadata) && !(metadata instanceof Uint8Array)
        ? metadata
        : {},
    revision: Number(e.revision),
    position: position ? encodePosition(position) : '',
    recordedAt: e.created.toISOString(),
  };
}
