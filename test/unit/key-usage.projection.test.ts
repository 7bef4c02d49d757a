import { expect } from 'chai';
import { decideAndFold } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream, packDebits, withCallKeys, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { keyUsageProjection } from '../../projections/key-usage/key-usage.projection.js';
import { ProjectionHarness } from '../support/projection-harness.js';

const MAY = new Date('2024-05-10T10:00:00Z');
const LATER = new Date('2024-05-10T11:30:00Z');
const JUNE = new Date('2024-06-03T09:00:00Z');

const debit = (i: number, key?: string): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id: `req_${i}`, endpoint: 'screener', channel: 'rest', cost: 1, ...(key === undefined ? {} : { key_id: key }) },
});
/** Each call's key by request id, as the ledger service knows it from its commands. */
const keysOf = (commands: LedgerCommand[]) => new Map(commands.flatMap((c) => (c.type === 'DebitCredits' && c.data.key_id ? [[c.data.request_id, c.data.key_id] as const] : [])));

/** Decides commands one after another on a ledger, as the service decides an append. */
function decideAll(state: LedgerState, commands: LedgerCommand[], now: Date) {
  const events: LedgerEvent[] = [];
  for (const c of commands) {
    const d = decideAndFold(state, c, now);
    events.push(...d.events);
    state = d.state;
  }
  return { events, state };
}

describe('The key-usage projection (each key’s last charged call)', () => {
  it("keeps each key's last instant, from single debits and batches alike, and ignores debits that name no key", async () => {
    const h = new ProjectionHarness(keyUsageProjection);
    const commands = [debit(1, 'key_a'), debit(2, 'key_b'), debit(3, 'key_a'), debit(4), debit(5, 'key_b'), debit(6)];
    const record = (events: LedgerEvent[]) =>
      h.applyBatch(...withCallKeys(packDebits(events), keysOf(commands)).map((e) => ({ ...h.event(ledgerStream('acc-1'), e.type, e.data), metadata: e.metadata ?? {} })));
    const opened = decideAll(initialLedgerState, [{ type: 'OpenLedger', data: { account_id: 'acc-1', tier: 'hobbyist', pro: false } }], MAY);
    const may = decideAll(opened.state, commands.slice(0, 4), MAY);
    await record([...opened.events, ...may.events]);
    const later = decideAll(may.state, [commands[4]!], LATER);
    await record(later.events);
    const june = decideAll(later.state, [commands[5]!], JUNE);
    await record(june.events);

    expect(h.snapshot()['key_last_used']).to.deep.equal({
      key_a: { key_id: 'key_a', account_id: 'acc-1', last_used_at: MAY.toISOString() },
      key_b: { key_id: 'key_b', account_id: 'acc-1', last_used_at: LATER.toISOString() },
    });
  });

  it('ignores malformed data and events of other streams without failing', async () => {
    const h = new ProjectionHarness(keyUsageProjection);
    const at = { at: MAY.toISOString() };
    const withMeta = (streamId: string, type: string, data: unknown, metadata: Record<string, unknown>) => ({ ...h.event(streamId, type, data), metadata });
    await h.apply(
      withMeta('account-acc-1', 'CreditsDebited', at, { key_id: 'key_x' }),
      withMeta(ledgerStream('acc-1'), 'CreditsDebited', null, { key_id: 'key_x' }),
      withMeta(ledgerStream('acc-1'), 'CreditsDebitedBatch', at, { key_ids: 'key_y' }),
      withMeta(ledgerStream('acc-1'), 'CreditsDebited', at, { key_id: 42 }),
      withMeta(ledgerStream('acc-1'), 'CreditsDebited', { ...at, key_id: 'key_in_data' }, {}),
    );
    expect(h.snapshot()['key_last_used'] ?? {}).to.deep.equal({});
  });
});
