/**
 * A small, seeded property-testing kit with the shape of fast-check's API (`fc.assert`,
 * `fc.property`, `fc.integer`, `fc.array`, …), for the properties of test/unit/properties.test.ts.
 * fast-check itself is not in node_modules; once it is, `import fc from 'fast-check'` can replace
 * `import { fc } from '../support/mini-check.js'` for the combinators used here.
 *
 * Generation reads every random choice from a tape of 32-bit draws. Replaying a tape gives the
 * same value, so a failing case shrinks the way Hypothesis does it: spans of the tape are
 * deleted, draws lowered towards 0 (every combinator maps draw 0 to its simplest value), and the
 * shortest tape that still fails is reported, with the seed and the run that found it.
 */

/** The random choices of one generated value. */
export class Tape {
  readonly draws: number[] = [];
  private at = 0;
  /** `replay`: draws to read first; past its end, `random` gives more (or 0 when shrinking). */
  constructor(
    private readonly replay: readonly number[],
    private readonly random: (() => number) | null,
  ) {}

  draw(): number {
    let d: number;
    if (this.at < this.replay.length) d = this.replay[this.at]!;
    else d = this.random ? this.random() : 0;
    this.at++;
    this.draws.push(d);
    return d;
  }
}

/** mulberry32: a tiny, good-enough 32-bit generator. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

export interface Arbitrary<T> {
  generate(tape: Tape): T;
  map<U>(f: (v: T) => U): Arbitrary<U>;
  chain<U>(f: (v: T) => Arbitrary<U>): Arbitrary<U>;
  filter(keep: (v: T) => boolean): Arbitrary<T>;
}

function arbitrary<T>(generate: (tape: Tape) => T): Arbitrary<T> {
  const self: Arbitrary<T> = {
    generate,
    map: (f) => arbitrary((t) => f(generate(t))),
    chain: (f) => arbitrary((t) => f(generate(t)).generate(t)),
    filter: (keep) =>
      arbitrary((t) => {
        for (let i = 0; i < 100; i++) {
          const v = generate(t);
          if (keep(v)) return v;
        }
        throw new FilterExhausted();
      }),
  };
  return self;
}

class FilterExhausted extends Error {
  constructor() {
    super('filter kept none of 100 candidates');
  }
}

/** An integer in [min, max]; draw 0 is the value nearest 0 (then 1, -1, 2, -2, …). */
function intIn(tape: Tape, min: number, max: number): number {
  const span = max - min + 1;
  const d = tape.draw();
  // Two draws for spans beyond 2^32 (up to 2^53).
  const raw = span > 0x1_0000_0000 ? d * 0x20_0000 + (tape.draw() & 0x1f_ffff) : d;
  const offset = raw % span;
  if (min >= 0) return min + offset;
  if (max <= 0) return max - offset;
  const k = Math.ceil(offset / 2);
  const v = offset % 2 === 1 ? k : -k;
  return v >= min && v <= max ? v : min + offset;
}

const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));

type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export interface Property {
  /** Runs the check on one tape; the error when it fails, else null. */
  run(tape: Tape): { error: unknown; shown: () => string } | null;
}

export interface AssertOptions {
  seed?: number;
  numRuns?: number;
}

const globalOptions: Required<AssertOptions> = { seed: 20261125, numRuns: 100 };

function show(v: unknown): string {
  try {
    const text = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : typeof x === 'bigint' ? `${x}n` : x));
    return text === undefined ? String(v) : text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
  } catch {
    return String(v);
  }
}

/** Lowers the tape while the property still fails: fewer draws first, then smaller ones. */
function shrink(property: Property, draws: number[]): { draws: number[]; failure: NonNullable<ReturnType<Property['run']>> } {
  let best = draws;
  let failure = property.run(new Tape(best, null))!;
  const fails = (candidate: number[]) => {
    const f = property.run(new Tape(candidate, null));
    if (f === null || f.error instanceof FilterExhausted) return false;
    best = candidate;
    failure = f;
    return true;
  };
  for (let budget = 2000, improved = true; improved && budget > 0; ) {
    improved = false;
    for (let size = Math.max(1, best.length >> 1); size >= 1 && budget > 0; size >>= 1) {
      for (let i = 0; i + size <= best.length && budget > 0; budget--) {
        if (fails([...best.slice(0, i), ...best.slice(i + size)])) improved = true;
        else i += size;
      }
    }
    for (let i = 0; i < best.length && budget > 0; i++) {
      for (const lower of [0, best[i]! >>> 1, best[i]! - 1]) {
        if (budget-- <= 0 || lower < 0 || lower >= best[i]!) continue;
        const next = [...best];
        next[i] = lower;
        if (fails(next)) {
          improved = true;
          break;
        }
      }
    }
  }
  return { draws: best, failure };
}

type Check<A extends unknown[]> = (...values: A) => boolean | void;

function property<A>(a: Arbitrary<A>, check: Check<[A]>): Property;
function property<A, B>(a: Arbitrary<A>, b: Arbitrary<B>, check: Check<[A, B]>): Property;
function property<A, B, C>(a: Arbitrary<A>, b: Arbitrary<B>, c: Arbitrary<C>, check: Check<[A, B, C]>): Property;
function property(...args: unknown[]): Property {
  const check = args[args.length - 1] as (...values: unknown[]) => boolean | void;
  const arbs = args.slice(0, -1) as Arbitrary<unknown>[];
  return {
    run(tape) {
      let values: unknown[] = [];
      try {
        values = arbs.map((a) => a.generate(tape));
        if (check(...values) === false) throw new Error('the property returned false');
        return null;
      } catch (error) {
        return { error, shown: () => values.map(show).join(', ') };
      }
    },
  };
}

export const fc = {
  configureGlobal(options: AssertOptions): void {
    Object.assign(globalOptions, options);
  },

  constant: <T>(v: T): Arbitrary<T> => arbitrary(() => v),
  constantFrom: <T>(...values: T[]): Arbitrary<T> => arbitrary((t) => values[intIn(t, 0, values.length - 1)]!),
  boolean: (): Arbitrary<boolean> => arbitrary((t) => t.draw() % 2 === 1),
  integer: (o: { min?: number; max?: number } = {}): Arbitrary<number> =>
    arbitrary((t) => intIn(t, o.min ?? -0x8000_0000, o.max ?? 0x7fff_ffff)),
  nat: (max = 0x7fff_ffff): Arbitrary<number> => arbitrary((t) => intIn(t, 0, max)),
  /** Any double, the awkward ones (±0, ±Infinity, NaN, huge, tiny) often. */
  double: (): Arbitrary<number> =>
    arbitrary((t) => {
      const special = [0, -0, 1, -1, Infinity, -Infinity, NaN, Number.MAX_VALUE, Number.MIN_VALUE, Number.MAX_SAFE_INTEGER + 2, 1e21, 0.1, -1e-7];
      if (t.draw() % 3 === 0) return special[intIn(t, 0, special.length - 1)]!;
      const buf = new DataView(new ArrayBuffer(8));
      buf.setUint32(0, t.draw());
      buf.setUint32(4, t.draw());
      return buf.getFloat64(0);
    }),
  oneof: <T>(...arbs: Arbitrary<T>[]): Arbitrary<T> => arbitrary((t) => arbs[intIn(t, 0, arbs.length - 1)]!.generate(t)),
  option: <T>(arb: Arbitrary<T>): Arbitrary<T | null> => arbitrary((t) => (t.draw() % 4 === 0 ? null : arb.generate(t))),
  array: <T>(arb: Arbitrary<T>, o: { minLength?: number; maxLength?: number } = {}): Arbitrary<T[]> =>
    arbitrary((t) => {
      const n = intIn(t, o.minLength ?? 0, o.maxLength ?? 10);
      return Array.from({ length: n }, () => arb.generate(t));
    }),
  tuple: <A extends unknown[]>(...arbs: { [K in keyof A]: Arbitrary<A[K]> }): Arbitrary<A> => arbitrary((t) => arbs.map((a) => a.generate(t)) as A),
  record: <R extends Record<string, unknown>>(shape: { [K in keyof R]: Arbitrary<R[K]> }): Arbitrary<R> =>
    arbitrary((t) => {
      const out = {} as R;
      for (const k of Object.keys(shape) as (keyof R)[]) out[k] = shape[k].generate(t);
      return out;
    }),
  /** Characters from `unit` (one of the strings given), or printable ASCII. */
  string: (o: { minLength?: number; maxLength?: number; unit?: readonly string[] } = {}): Arbitrary<string> =>
    arbitrary((t) => {
      const chars = o.unit ?? PRINTABLE;
      const n = intIn(t, o.minLength ?? 0, o.maxLength ?? 20);
      let s = '';
      for (let i = 0; i < n; i++) s += chars[intIn(t, 0, chars.length - 1)]!;
      return s;
    }),
  /** Any UTF-16 string: unpaired surrogates, controls and astral characters included. */
  fullUnicodeString: (o: { maxLength?: number } = {}): Arbitrary<string> =>
    arbitrary((t) => {
      const n = intIn(t, 0, o.maxLength ?? 20);
      let s = '';
      for (let i = 0; i < n; i++) {
        const kind = t.draw() % 4;
        if (kind === 0) s += String.fromCharCode(intIn(t, 0, 0x7f));
        else if (kind === 1) s += String.fromCharCode(intIn(t, 0, 0xffff));
        else if (kind === 2) s += String.fromCodePoint(intIn(t, 0x10000, 0x10ffff));
        else s += PRINTABLE[intIn(t, 0, PRINTABLE.length - 1)]!;
      }
      return s;
    }),
  dictionary: <V>(key: Arbitrary<string>, value: Arbitrary<V>, o: { maxKeys?: number } = {}): Arbitrary<Record<string, V>> =>
    arbitrary((t) => {
      const n = intIn(t, 0, o.maxKeys ?? 5);
      const out: Record<string, V> = {};
      // defineProperty: a key such as "__proto__" stays an own key, as JSON.parse makes it.
      for (let i = 0; i < n; i++) Object.defineProperty(out, key.generate(t), { value: value.generate(t), enumerable: true, writable: true, configurable: true });
      return out;
    }),
  /** Any JSON value, nesting up to `maxDepth`. */
  jsonValue: (o: { maxDepth?: number; key?: Arbitrary<string> } = {}): Arbitrary<JsonValue> => {
    const key = o.key ?? fc.string({ maxLength: 8 });
    const leaf: Arbitrary<JsonValue> = fc.oneof<JsonValue>(
      fc.constant(null),
      fc.boolean(),
      fc.integer({ min: -1e6, max: 1e6 }),
      fc.double().map((d) => (Number.isFinite(d) ? d : 0)),
      fc.string({ maxLength: 12 }),
      fc.fullUnicodeString({ maxLength: 6 }),
    );
    const at = (depth: number): Arbitrary<JsonValue> =>
      depth <= 0
        ? leaf
        : fc.oneof<JsonValue>(
            leaf,
            leaf,
            fc.array(arbitrary((t) => at(depth - 1).generate(t)), { maxLength: 4 }),
            fc.dictionary(key, arbitrary((t) => at(depth - 1).generate(t)), { maxKeys: 4 }),
          );
    return at(o.maxDepth ?? 3);
  },

  property: property,

  /** Runs the property `numRuns` times from `seed`; throws the shrunk counterexample when it fails. */
  assert(property: Property, options: AssertOptions = {}): void {
    const { seed, numRuns } = { ...globalOptions, ...options };
    const random = mulberry32(seed);
    for (let run = 0; run < numRuns; run++) {
      const tape = new Tape([], random);
      const failure = property.run(tape);
      if (failure === null) continue;
      if (failure.error instanceof FilterExhausted) continue;
      const first = failure.shown();
      const shrunk = shrink(property, tape.draws);
      const reason = shrunk.failure.error instanceof Error ? shrunk.failure.error.message : String(shrunk.failure.error);
      const err = new Error(
        `Property failed on run ${run + 1} of ${numRuns} (seed ${seed}).\n` +
          `Counterexample (shrunk from ${tape.draws.length} to ${shrunk.draws.length} draws): ${shrunk.failure.shown()}\n` +
          `First found: ${first}\n` +
          `Reason: ${reason}`,
      );
      (err as { cause?: unknown }).cause = shrunk.failure.error;
      throw err;
    }
  },
};

export type { JsonValue };
