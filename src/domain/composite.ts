/**
 * The service's composite score. The spec keeps the formula internal ("Composite formula: not
 * shown"); it lives here, once, and every writer (ingest, demo seed) calls it.
 */
export function compositeScore(mainStreet: number, wallStreet: number): number {
  // Consumer demand leads; analyst sentiment tempers it. Agreement between the two adds
  // conviction, disagreement removes some of it.
  const blend = 0.6 * mainStreet + 0.4 * wallStreet;
  const agreement = 1 - Math.abs(mainStreet - wallStreet) / 100;
  const value = blend * (0.9 + 0.1 * agreement);
  return round1(Math.min(100, Math.max(0, value)));
}

export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

export function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
