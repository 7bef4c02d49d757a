/**
 * How a capped history read stays within what its caller will pay for (X-Max-Credits): first a
 * count of the month buckets that lie wholly inside the window, each of which holds at least one
 * row of the answer (an index count: no row is read), then, while reading, a stop one row past
 * the maximum. Either way the call is refused (412 `cost_exceeds_max`) before it reads the rows
 * it would not be paid for.
 */
import type { ReadStore } from '../../src/core/read-store.port.js';
import { scoreHistory } from '../../projections/score-history/score-history.projection.js';

export interface RowBudget {
  /** Rows the caller's maximum pays for (Infinity without one). */
  rows: number;
  /** Throws the refusal of a read that found more rows than `rows`. */
  over(): void;
}

export const UNBOUNDED: RowBudget = { rows: Infinity, over: () => undefined };

/**
 * Refuses, before any row is read, a window whose inner months alone hold more buckets (so more
 * rows) than the budget pays for. Only where every row of a bucket in the window is answered: not
 * with `since`, a cursor or `as_known_at`, which leave rows out (their reads are bounded as they go).
 */
export async function requireInnerMonthsWithin(reads: ReadStore, budget: RowBudget, tickers: readonly string[] | null, startMonth: string, endMonth: string): Promise<void> {
  if (budget.rows === Infinity) return;
  const month = { $gt: startMonth, $lt: endMonth };
  const buckets = await reads.count(scoreHistory, tickers === null ? { month } : { ticker: { $in: [...tickers] }, month });
  if (buckets > budget.rows) budget.over();
}
