/** The ledger's billing period: a calendar month in UTC, from 00:00 on the 1st. */
/** The month `periodOf` answered last, as [start, end) in ms: every call in a month asks for it. */
let lastMonth = { start: 0, end: 0, period: '' };

/** `YYYY-MM` of an instant, in UTC. */
export function periodOf(now: Date): string {
  const t = now.getTime();
  if (t >= lastMonth.start && t < lastMonth.end) return lastMonth.period;
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  lastMonth = { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1), period: now.toISOString().slice(0, 7) };
  return lastMonth.period;
}

/** 00:00Z on the 1st of the month after `now`'s month. */
export function nextPeriodStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}
