/**
 * Randomness of the demo dataset: seeded streams (mulberry32) and a stateless hash for values that
 * must not depend on how far the simulation has run (earnings dates).
 */

/** One independent stream per concern, so a change in one concern's draws leaves the others alone. */
export const STREAM_TAGS = { setup: 1, scores: 2, market: 3, prices: 4, visits: 5, restate: 6, signals: 7, earnings: 8, trend: 9 } as const;

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  /** Standard normal draw by inverse-CDF table lookup (fast; tails truncated near ±4σ). */
  normal(): number {
    const x = this.next() * NORMAL_TABLE_SIZE;
    const k = x | 0;
    const lo = NORMAL_TABLE[k]!;
    return lo + (NORMAL_TABLE[k + 1]! - lo) * (x - k);
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

export function seededStream(seed: number, tag: number): Rng {
  return new Rng(hash32(seed, tag));
}

const NORMAL_TABLE_SIZE = 16_384;
/**
 * Inverse normal CDF at the midpoints of NORMAL_TABLE_SIZE equal-probability cells (Acklam's
 * rational approximation), plus one extra end value for interpolation. A constant, computed once.
 */
const NORMAL_TABLE: Float64Array = (() => {
  const table = new Float64Array(NORMAL_TABLE_SIZE + 1);
  for (let k = 0; k <= NORMAL_TABLE_SIZE; k++) table[k] = inverseNormalCdf((Math.min(k, NORMAL_TABLE_SIZE - 1) + 0.5) / NORMAL_TABLE_SIZE);
  return table;
})();

function inverseNormalCdf(p: number): number {
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const [a0, a1, a2, a3, a4, a5] = a as [number, number, number, number, number, number];
  const [b0, b1, b2, b3, b4] = b as [number, number, number, number, number];
  const [c0, c1, c2, c3, c4, c5] = c as [number, number, number, number, number, number];
  const [d0, d1, d2, d3] = d as [number, number, number, number];
  const tail = (q: number) => (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return ((((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q) / (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1);
}

function hash32(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    h ^= h >>> 12;
    h = Math.imul(h, 0x297a2d39);
    h ^= h >>> 15;
  }
  return h >>> 0;
}

export const hashUnit = (...parts: number[]) => hash32(...parts) / 4294967296;
