/**
 * EventStore port: an append-only log of streams with optimistic concurrency.
 * Adapters: infra/sqlite (embedded default), infra/postgresql (PostgreSQL), infra/eventstoredb (EventStoreDB / KurrentDB).
 */

/** An event as a writer proposes it. `type` is past tense (`ScoresPublished`). */
export interface NewEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  /** Adapters add `recorded_at`; writers may add correlation ids etc. */
  metadata?: Record<string, unknown>;
  /** Idempotency / identity; adapters generate a UUID when absent. */
  id?: string;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  streamId: string;
  type: Type;
  data: Data;
  metadata: Record<string, unknown>;
  /** 0-based position of the event inside its stream. */
  revision: number;
  /**
   * Global position in the whole log. Opaque, but adapters encode it so that plain string
   * comparison orders events (fixed-width, zero-padded). Used as the projector checkpoint.
   */
  position: string;
  /** ISO instant the store recorded the event (the store's clock, not the writer's). */
  recordedAt: string;
}

/**
 * `no_stream`: the stream must not exist. `stream_exists`: it must. `any`: no check.
 * A number: the revision of the stream's last event must equal it.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

export interface AppendResult {
  /** Revision of the last event written; pass it as `expectedRevision` for the next append. */
  nextExpectedRevision: number;
  /** Global position of the last event written. */
  position: string;
}

/**
 * One stream's part of an `appendMany`. With no events and an `expectedRevision` other than `any`
 * it is a condition: it writes nothing, and the whole `appendMany` fails with ConcurrencyError
 * unless the stream is still there (a fenced write: src/core/lease.ts). Its result's
 * `nextExpectedRevision` is the stream's revision (-1: no stream); its position is unspecified.
 */
export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  expectedRevision?: ExpectedRevision;
}

export interface ReadStreamOptions {
  fromRevision?: number;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Exclusive lower bound (a position previously seen). Null/absent = from the beginning. */
  after?: string | null;
  maxCount?: number;
}

export interface Subscription {
  /** Resolves once the subscription has stopped and no handler is running. */
  stop(): Promise<void>;
}

export interface SubscribeOptions {
  after?: string | null;
  /** Called with consecutive batches, in log order. The next batch waits for the promise. */
  onEvents(events: RecordedEvent[]): Promise<void>;
  /** A handler error or adapter failure; the subscription stops after reporting it. */
  onError?(err: unknown): void;
  /** Called once when the subscription has delivered everything that existed when it started. */
  onCaughtUp?(): void;
  maxBatch?: number;
  /**
   * A hint: the subscriber reads the data of these event types only, so an adapter may hand events
   * of other types with `data: null` (their position, type and stream as usual), sparing their
   * transfer and decoding. A projector of a few read models skips the bulk of the log this way.
   */
  dataTypes?: readonly string[];
}

/**
 * How an adapter stores event data (`encode`, before it is written) and gives it back (`decode`,
 * after it is read), so that a compact encoding stays out of every writer and reader. `decode`
 * must accept data in every encoding ever written, the plain one included; an adapter without a
 * codec stores data as it is given.
 */
export interface EventCodec {
  encode(type: string, data: unknown): unknown;
  decode(type: string, data: unknown): unknown;
}

export const plainEncoding: EventCodec = { encode: (_type, data) => data, decode: (_type, data) => data };

export interface EventStore {
  /** Atomic for one stream. Throws ConcurrencyError when `expectedRevision` does not hold. */
  append(streamId: string, events: NewEvent[], expectedRevision?: ExpectedRevision): Promise<AppendResult>;
  /**
   * Several streams at once. Atomic on the embedded store and PostgreSQL (all or nothing, conditions
   * included: no append to a checked stream comes between the check and the commit); engines without
   * multi-stream transactions check the conditions first, then apply the appends in order, each
   * stream atomically.
   */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]>;
  /** Events of one stream in order; [] when the stream does not exist. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the last event in the log, or null for an empty log. */
  headPosition(): Promise<string | null>;
  /** Catches up from `after`, then follows new events live (including other processes' appends). */
  subscribeToAll(options: SubscribeOptions): Subscription;
  close(): Promise<void>;
}
