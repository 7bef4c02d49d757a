/** The only way anything reads the time. `SCORES_NOW` pins it (see config). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

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
