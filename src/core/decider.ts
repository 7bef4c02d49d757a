/**
 * How a stream decides (after Emmett's `Decider`): the state a stream's events fold to, and the
 * events a command adds to it. Pure and synchronous: time comes in as `now`, ids inside the
 * command, and whatever needs I/O (a sealed address, a payment) is done before the command is
 * built. `handleCommand` (command-handler.ts) is given the decider object and runs it: read the
 * stream, fold, decide, append at the revision read. Each feature's decider lives with its events
 * and state under `src/domain/<feature>/` (docs/architecture.md).
 */
import type { ExpectedRevision, NewEvent } from './event-store.port.js';

export interface Decider<State, Command, Event, Result = void> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  /** The command's events on `state` at `now` ([] for none), or a `Decision`; throws to refuse. */
  decide(state: State, command: Command, now: Date): Event[] | Decision<State, Event, Result>;
}

/** Events for a stream that was not read for the decision, appended at `expectedRevision` (any by default). */
export interface StreamWrite {
  streamId: string;
  events: NewEvent[];
  expectedRevision?: ExpectedRevision;
}

/**
 * A decision that says more than its events: the state they fold to (a decider that folds as it
 * decides spares the handler folding them again), an answer for the caller, and events for other
 * streams that go in the same atomic append (a sign-in that opens an account and its ledger).
 */
export interface Decision<State, Event, Result> {
  events: Event[];
  state?: State;
  result?: Result;
  /** Events for the other streams read together with the first (by stream id), or for streams not read. */
  writes?: StreamWrite[];
}

/** The events of a decision, whichever form `decide` answered in. */
export const eventsOf = <State, Event, Result>(d: Event[] | Decision<State, Event, Result>): Event[] => (Array.isArray(d) ? d : d.events);

/**
 * `decider` with each event sent to the stream `streamOf` names (undefined: the first stream the
 * command is decided on), so that one decision is written to several streams in one append.
 */
export function routed<State, Command, Event extends NewEvent, Result>(
  decider: Decider<State, Command, Event, Result>,
  streamOf: (event: Event, command: Command) => { streamId: string; expectedRevision?: ExpectedRevision } | undefined,
): Decider<State, Command, Event, Result> {
  return {
    initialState: () => decider.initialState(),
    evolve: (state, event) => decider.evolve(state, event),
    decide(state, command, now) {
      const decided = decider.decide(state, command, now);
      const events: Event[] = [];
      const writes: StreamWrite[] = [];
      for (const e of eventsOf(decided)) {
        const to = streamOf(e, command);
        if (!to) events.push(e);
        else {
          const write = writes.find((w) => w.streamId === to.streamId);
          if (write) write.events.push(e);
          else writes.push({ streamId: to.streamId, events: [e], ...(to.expectedRevision === undefined ? {} : { expectedRevision: to.expectedRevision }) });
        }
      }
      return Array.isArray(decided) ? { events, writes } : { events, writes: [...(decided.writes ?? []), ...writes], state: decided.state, result: decided.result };
    },
  };
}
