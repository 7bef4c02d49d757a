/** The ledger's billing period: a calendar month in UTC, from 00:00 on the 1st. */

/** `YYYY-MM` of an instant, in UTC (built from the fields: every metered call asks, twice). */
export function periodOf(now: Date): string {
  const month = now.getUTCMonth() + 1;
  return `${now.getUTCFullYear()}-${month < 10 ? '0' : ''}${month}`;
}

/** 00:00Z on the 1st of the month after `now`'s month. */
export function nextPeriodStart(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}
