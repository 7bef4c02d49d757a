/**
 * The one way a command runs (after Emmett's CommandHandler): fold each stream it decides on from
 * `initialState` with `evolve`, `decide`, and append the decision at the revisions it was taken
 * on. When another writer got there first (ConcurrencyError) everything is read and decided
 * again, a bounded number of times. Several streams go in one `appendMany`: all or nothing.
 */
import { ConcurrencyError } from './errors.js';
import type { AppendResult, EventStore, NewEvent, RecordedEvent, StreamAppend } from './event-store.port.js';

/** A stream's state up to `revision` (-1: no events yet), and the global position of that event. */
export interface Folded<State> {
  state: State;
  revision: number;
  position: string | null;
}

/** A stream and how its events fold into the state a command decides on. */
export interface Stream<State, Event = RecordedEvent> {
  streamId: string;
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  /**
   * The folded state from somewhere cheaper than the whole stream (a cache, a snapshot). `fresh`
   * after a conflict: the state must then hold every event of the stream.
   */
  load?: (fresh: boolean) => Promise<Folded<State>>;
}

/**
 * What a command decided: events per stream and what to answer. A stream folded for the decision
 * is appended at the revision it was folded to; any other stream at the `expectedRevision` given.
 */
export interface Decision<Result> {
  writes: StreamAppend[];
  result: Result;
}

export interface Handled<Result> {
  result: Result;
  /** The writes that had events, as appended. */
  written: (StreamAppend & AppendResult)[];
}

type StatesOf<S> = { [K in keyof S]: S[K] extends Stream<infer State, any> ? State : never };
/** Events alone are for the first stream, and are the result too. */
type Decided = NewEvent[] | Decision<unknown>;
type ResultOf<D> = D extends Decision<infer Result> ? Result : D;
type Options = { attempts?: number };

/** Reads what the stream holds after `from` (all of it by default) and folds it on top. */
export async function foldStream<State, Event>(store: EventStore, stream: Stream<State, Event>, from?: Folded<State>): Promise<Folded<State>> {
  const events = await store.readStream(stream.streamId, { fromRevision: (from?.revision ?? -1) + 1 });
  let state = from ? from.state : stream.initialState();
  for (const e of events) state = stream.evolve(state, e as Event);
  const last = events[events.length - 1];
  return last ? { state, revision: last.revision, position: last.position } : (from ?? { state, revision: -1, position: null });
}

/** One stream: `decide` gets its state. */
export function handleCommand<State, Event, D extends Decided>(
  store: EventStore,
  stream: Stream<State, Event>,
  decide: (state: State) => D | Promise<D>,
  options?: Options,
): Promise<Handled<ResultOf<D>>>;
/** Several streams decided together: `decide` gets their states in the same order. */
export function handleCommand<const S extends readonly Stream<any, any>[], D extends Decided>(
  store: EventStore,
  streams: S,
  decide: (states: StatesOf<S>) => D | Promise<D>,
  options?: Options,
): Promise<Handled<ResultOf<D>>>;
export async function handleCommand(
  store: EventStore,
  streams: Stream<unknown, unknown> | readonly Stream<unknown, unknown>[],
  decide: (states: any) => Decided | Promise<Decided>,
  { attempts = 5 }: Options = {},
): Promise<Handled<unknown>> {
  const list = Array.isArray(streams) ? (streams as readonly Stream<unknown, unknown>[]) : [streams as Stream<unknown, unknown>];
  // Indexed loops and literals, no spreads: every metered call comes through here.
  for (let attempt = 1; ; attempt++) {
    const folded: Folded<unknown>[] = [];
    for (let i = 0; i < list.length; i++) folded.push(await (list[i]!.load?.(attempt > 1) ?? foldStream(store, list[i]!)));
    let decided = decide(list === streams ? folded.map((f) => f.state) : folded[0]!.state);
    if (decided instanceof Promise) decided = await decided;
    const { writes, result } = Array.isArray(decided) ? { writes: [{ streamId: list[0]!.streamId, events: decided }], result: decided } : decided;
    const appends: StreamAppend[] = [];
    for (const { streamId, events, expectedRevision } of writes) {
      if (events.length === 0) continue;
      let read: Folded<unknown> | undefined;
      for (let i = 0; i < list.length; i++) if (list[i]!.streamId === streamId) read = folded[i];
      appends.push({ streamId, events, expectedRevision: read ? (read.revision < 0 ? 'no_stream' : read.revision) : expectedRevision });
    }
    try {
      const results = appends.length ? await store.appendMany(appends) : [];
      const written: Handled<unknown>['written'] = [];
      for (let i = 0; i < appends.length; i++) {
        const { streamId, events, expectedRevision } = appends[i]!;
        const { nextExpectedRevision, position } = results[i]!;
        written.push({ streamId, events, expectedRevision, nextExpectedRevision, position });
      }
      return { result, written };
    } catch (err) {
      if (!(err instanceof ConcurrencyError) || attempt >= attempts) throw err;
      // Another process appended to the stream first (two API replicas charging one account): a
      // short random pause from the second conflict on, so the writers stop colliding in step.
      if (attempt > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(2 ** attempt, 64)));
    }
  }
}
