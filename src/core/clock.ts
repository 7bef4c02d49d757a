/** The only way anything reads the time. `SCORES_NOW` pins it (see config). */
export interface Clock {
  now(): Date;
}

/**
 * The wall clock. The data clock is this one unless `SCORES_NOW` pins it; the transport clock
 * (`Services.transportClock`: when a message really leaves the process, such as a webhook's
 * `webhook-timestamp`, its envelope's `sent_at` and its retry schedule) is always this one outside
 * tests, because a receiver checks those times against its own clock.
 */
export const systemClock: Clock = { now: () => new Date() };

/**
 * The wall clock of a handler's dependencies: their transport clock, else their one clock. What a
 * receiver or a person checks against real time runs on it even where SCORES_NOW pins the data:
 * webhook timestamps and retries, sign-in links, sessions, a rotated key's grace.
 */
export function wallClockOf(deps: { clock: Clock; transportClock?: Clock }): Clock {
  return deps.transportClock ?? deps.clock;
}

export function fixedClock(at: Date | string): Clock & { set(to: Date | string): void; advance(ms: number): void } {
  let t = new Date(at).getTime();
  return {
    now: () => new Date(t),
    set(to) {
      t = new Date(to).getTime();
    },
    advance(ms) {
      t += ms;
    },
  };
}
