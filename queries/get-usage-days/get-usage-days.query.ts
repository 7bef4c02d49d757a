import type { ReadStore } from '../../src/core/read-store.port.js';
import { usageDays, usageDaysProjection, type UsageDayDoc } from '../../projections/usage-days/usage-days.projection.js';

/** Calls and credits charged per day in a month (`YYYY-MM`, UTC) to one account, oldest day first: the account page's usage chart. */
export async function getUsageDays(reads: ReadStore, accountId: string, month: string): Promise<UsageDayDoc[]> {
  await reads.register(usageDaysProjection.collections);
  const days = await reads.find(usageDays, { account_id: accountId, day: { $gte: `${month}-01`, $lte: `${month}-31` } }, { sort: [['day', 1]], limit: 31 });
  return days.items;
}
