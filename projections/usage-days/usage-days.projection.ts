/**
 * `usage_days`: credits and calls charged per account and UTC day, what the account page's usage
 * chart draws. Folded from the ledger's debits (one call or a batch of calls). Each day keeps the
 * ledger stream revision it counted last, so an event handed again counts once: on a store without
 * transactions a commit cut short by a kill leaves the day written and the checkpoint behind, and
 * the next owner of the read model gets the event again (a fleet's kill -9 test found a day one
 * call ahead of a fresh replay).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { ledgerAccountOf } from '../shared/ledger-streams.js';

export interface UsageDayDoc {
  account_id: string;
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  calls: number;
  credits: number;
  /** The revision, in the account's ledger stream, of the last debit event counted (-1: none). */
  revision: number;
}

export const usageDays = defineCollection<UsageDayDoc>({
  name: 'usage_days',
  key: (d) => `${d.account_id}|${d.day}`,
  fields: ['account_id', 'day'],
  indexes: [['account_id', 'day']],
});

export const usageDaysProjection: Projection = {
  // v2: each day's revision (the documents changed shape: rebuilt from the log).
  name: 'usage-days-v2',
  collections: [usageDays],
  eventTypes: ['CreditsDebited', 'CreditsDebitedBatch'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const accountId = ledgerAccountOf(raw.streamId);
    const at = (raw.data as { at?: unknown } | null)?.at;
    if (accountId === null || typeof at !== 'string') return;
    // A batch's costs are summed from its column: its lines' hashes are not needed here.
    const costs = raw.type === 'CreditsDebitedBatch' ? (raw.data as { calls?: { cost?: unknown } }).calls?.cost : [(raw.data as { cost?: unknown }).cost];
    let calls = 0;
    let credits = 0;
    for (const cost of Array.isArray(costs) ? (costs as unknown[]) : []) {
      if (typeof cost !== 'number') continue;
      calls++;
      credits += cost;
    }
    if (calls === 0) return;
    const day = at.slice(0, 10);
    const doc = (await ctx.get(usageDays, `${accountId}|${day}`)) ?? { account_id: accountId, day, calls: 0, credits: 0, revision: -1 };
    if (raw.revision <= doc.revision) return;
    ctx.upsert(usageDays, { ...doc, calls: doc.calls + calls, credits: doc.credits + credits, revision: raw.revision });
  },
};
