import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../../src/core/paths.js';

/** One listed US stock of the demo universe. `size_rank` 1 = largest by market capitalisation. */
export interface TickerRow {
  symbol: string;
  company: string;
  /** GICS sector name, e.g. `Information Technology`. */
  sector: string;
  size_rank: number;
}

/**
 * The demo universe (S&P 500 members plus well-known mid caps), ordered by `size_rank`.
 * Read from the source tree (`commands/seed-demo/dataset/us-tickers.json` is not copied into dist/).
 */
export function loadUsTickers(): TickerRow[] {
  const file = join(projectRoot(), 'commands/seed-demo/dataset/us-tickers.json');
  const rows = JSON.parse(readFileSync(file, 'utf8')) as TickerRow[];
  return rows.slice().sort((a, b) => a.size_rank - b.size_rank);
}
