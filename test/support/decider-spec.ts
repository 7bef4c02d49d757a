/**
 * Given / when / then for pure deciders:
 *   spec.given(events).when(command, now).then(expectedEvents)
 *   spec.given(events).when(command, now).thenThrows('credits_exhausted', (err) => …)
 *   spec.given(events).when(command, now).thenFails(/invariant/)   (a plain Error)
 * `normalize` maps each produced event before comparison (e.g. to drop hash-chain fields), so
 * expectations state only what the behaviour is about.
 */
import { expect } from 'chai';
import { eventsOf, type Decider } from '../../src/core/decider.js';
import { AppError, type ErrorCode } from '../../src/core/errors.js';

export function deciderSpec<State, Command, Event, Result = void>(
  decider: Decider<State, Command, Event, Result>,
  options: { normalize?: (event: Event) => unknown } = {},
) {
  const normalize = options.normalize ?? ((e: Event) => e);
  return {
    given(events: Event[]) {
      return {
        when(command: Command, now: Date) {
          const run = () => eventsOf(decider.decide(events.reduce((s, e) => decider.evolve(s, e), decider.initialState()), command, now));
          return {
            /** Asserts the produced events (normalized) deep-equal `expected`; returns them raw. */
            then(expected: unknown[]): Event[] {
              const produced = run();
              expect(produced.map(normalize)).to.deep.equal(expected);
              return produced;
            },
            /** Asserts the decision is refused with an AppError of `code` (so no events at all). */
            thenThrows(code: ErrorCode, check?: (err: AppError) => void): AppError {
              let produced: Event[] | undefined;
              try {
                produced = run();
              } catch (err) {
                expect(err).to.be.instanceOf(AppError);
                expect((err as AppError).code).to.equal(code);
                check?.(err as AppError);
                return err as AppError;
              }
              expect.fail(`expected AppError(${code}), got events ${JSON.stringify(produced?.map(normalize))}`);
            },
            /**
             * Asserts the decision fails with a plain Error whose message contains `message` (a
             * string) or matches it (a RegExp): a broken invariant rather than a caller's mistake.
             */
            thenFails(message: string | RegExp): Error {
              let produced: Event[] | undefined;
              try {
                produced = run();
              } catch (err) {
                expect(err).to.be.instanceOf(Error);
                const text = (err as Error).message;
                if (typeof message === 'string') expect(text).to.include(message);
                else expect(text).to.match(message);
                return err as Error;
              }
              expect.fail(`expected an Error (${String(message)}), got events ${JSON.stringify(produced.map(normalize))}`);
            },
          };
        },
      };
    },
  };
}
