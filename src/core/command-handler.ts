/**
 * The one way a command runs (after Emmett's DeciderCommandHandler): given a decider, fold each
 * stream it decides on from `initialState` with `evolve`, `decide`, and append the decision at
 * the revisions it was taken on. When another writer got there first (ConcurrencyError)
 * everything is read and decided again, a bounded number of times. A decision's streams go in one
 * `appendMany`: all or nothing. Nothing else in the project appends a feature's events
 * (eslint: `decider/appends-through-handler`).
 */
import type { Clock } from './clock.js';
import type { Decider, Decision } from './decider.js';
import { ConcurrencyError } from './errors.js';
import type { AppendResult, EventStore, NewEvent, StreamAppend } from './event-store.port.js';

/** A stream's state up to `revision` (-1: no events yet), and the global position of that event. */
export interface Folded<State> {
  state: State;
  revision: number;
  position: string | null;
}

/**
 * Where a decider's stream is, and optionally a cheaper way to its folded state (a cache, a
 * snapshot). `fresh` after a conflict: the state must then hold every event of the stream.
 */
export interface StreamSource<State> {
  streamId: string;
  load?: (fresh: boolean) => Promise<Folded<State>>;
}

/**
 * Several streams whose folded state comes from somewhere cheaper than reading them whole (states
 * kept between commands): `load` answers the state over all of them and each one's revision, in
 * `streamIds` order.
 */
export interface StreamsSource<State> {
  streamIds: readonly string[];
  load: (fresh: boolean) => Promise<{ state: State; revisions: number[] }>;
}

/** One stream (an id or a source), or several read together, whose events one `evolve` folds (they carry their `streamId`). */
export type Streams<State> = string | StreamSource<State> | readonly string[] | StreamsSource<State>;

export interface Handled<State, Event, Result> {
  /** The events decided for the (first) stream. */
  events: Event[];
  /** The state after them (for several streams: the decision's, else the state read). */
  state: State;
  result: Result | undefined;
  /** The writes that had events, as appended. */
  written: (StreamAppend & AppendResult)[];
  /** The first stream's revision and position after the command (as read when nothing was written). */
  revision: number;
  position: string | null;
}

type Options = { attempts?: number };
type Evolving<State> = Pick<Decider<State, unknown, unknown, unknown>, 'initialState' | 'evolve'>;

/** Reads what the stream holds after `from` (all of it by default) and folds it on top. */
export async function foldStream<State>(store: EventStore, decider: Evolving<State>, streamId: string, from?: Folded<State>): Promise<Folded<State>> {
  const events = await store.readStream(streamId, { fromRevision: (from?.revision ?? -1) + 1 });
  let state = from ? from.state : decider.initialState();
  for (let i = 0; i < events.length; i++) state = decider.evolve(state, events[i]);
  const last = events[events.length - 1];
  return last ? { state, revision: last.revision, position: last.position } : (from ?? { state, revision: -1, position: null });
}

/** The streams read for a decision, the first one's folded state, and each one's revision. */
async function readAll<State>(store: EventStore, decider: Evolving<State>, streams: Streams<State>, fresh: boolean): Promise<{ ids: readonly string[]; folded: Folded<State>; revisions: number[] }> {
  if (typeof streams === 'string') {
    const folded = await foldStream(store, decider, streams);
    return { ids: [streams], folded, revisions: [folded.revision] };
  }
  if ('streamIds' in (streams as object)) {
    const source = streams as StreamsSource<State>;
    const { state, revisions } = await source.load(fresh);
    return { ids: source.streamIds, folded: { state, revision: revisions[0] ?? -1, position: null }, revisions };
  }
  if (!Array.isArray(streams)) {
    const source = streams as StreamSource<State>;
    const folded = await (source.load ? source.load(fresh) : foldStream(store, decider, source.streamId));
    return { ids: [source.streamId], folded, revisions: [folded.revision] };
  }
  const ids = streams as readonly string[];
  let state = decider.initialState();
  const revisions: number[] = [];
  let position: string | null = null;
  for (let i = 0; i < ids.length; i++) {
    const events = await store.readStream(ids[i]!);
    for (let e = 0; e < events.length; e++) state = decider.evolve(state, events[e]);
    const last = events[events.length - 1];
    revisions.push(last ? last.revision : -1);
    if (i === 0) position = last ? last.position : null;
  }
  return { ids, folded: { state, revision: revisions.length ? revisions[0]! : -1, position }, revisions };
}

/** The appends of a decision: a stream that was read at the revision it was read at, any other at its own. */
function appendsOf(ids: readonly string[], revisions: number[], events: NewEvent[], decision: Decision<unknown, unknown, unknown> | null): StreamAppend[] {
  const appends: StreamAppend[] = [];
  const at = (i: number) => (revisions[i]! < 0 ? 'no_stream' : revisions[i]!);
  if (events.length > 0) {
    if (ids.length === 0) throw new Error('a decision on no stream names the stream of each of its events (writes)');
    appends.push({ streamId: ids[0]!, events, expectedRevision: at(0) });
  }
  const writes = decision?.writes;
  if (!writes) return appends;
  for (let w = 0; w < writes.length; w++) {
    const { streamId, events: more, expectedRevision } = writes[w]!;
    if (more.length === 0) continue;
    const read = ids.indexOf(streamId);
    appends.push({ streamId, events: more, expectedRevision: read >= 0 ? at(read) : expectedRevision });
  }
  return appends;
}

/**
 * Runs `command` through `decider` on `streams`, at the clock's time of each attempt, and
 * appends what it decided.
 */
export async function handleCommand<State, Command, Event extends NewEvent, Result = void>(
  store: EventStore,
  decider: Decider<State, Command, Event, Result>,
  streams: Streams<State>,
  command: Command,
  clock: Clock,
  { attempts = 5 }: Options = {},
): Promise<Handled<State, Event, Result>> {
  // Indexed loops and literals, no spreads: every metered call comes through here.
  for (let attempt = 1; ; attempt++) {
    const { ids, folded, revisions } = await readAll(store, decider, streams, attempt > 1);
    const decided = decider.decide(folded.state, command, clock.now());
    const decision = Array.isArray(decided) ? null : decided;
    const events = decision ? decision.events : (decided as Event[]);
    let state = decision?.state;
    if (state === undefined) {
      state = folded.state;
      if (ids.length === 1) for (let i = 0; i < events.length; i++) state = decider.evolve(state, events[i]!);
    }
    const appends = appendsOf(ids, revisions, events, decision);
    try {
      const results = appends.length ? await store.appendMany(appends) : [];
      const written: Handled<State, Event, Result>['written'] = [];
      let revision = folded.revision;
      let position = folded.position;
      for (let i = 0; i < appends.length; i++) {
        const { streamId, events: appended, expectedRevision } = appends[i]!;
        const { nextExpectedRevision, position: at } = results[i]!;
        written.push({ streamId, events: appended, expectedRevision, nextExpectedRevision, position: at });
        if (streamId === ids[0]) {
          revision = nextExpectedRevision;
          position = at;
        }
      }
      return { events, state, result: decision?.result, written, revision, position };
    } catch (err) {
      if (!(err instanceof ConcurrencyError) || attempt >= attempts) throw err;
      // Another process appended to the stream first (two API replicas charging one account): a
      // short random pause from the second conflict on, so the writers stop colliding in step.
      if (attempt > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(2 ** attempt, 64)));
    }
  }
}
