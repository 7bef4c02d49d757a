import { expect } from 'chai';
import { decideAndFold } from '../../commands/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream, packDebits, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { keyUsageProjection } from '../../projections/key-usage/key-usage.projection.js';
import { ProjectionHarness } from '../support/projection-harness.js';

const MAY = new Date('2024-05-10T10:00:00Z');
const LATER = new Date('2024-05-10T11:30:00Z');
const JUNE = new Date('2024-06-03T09:00:00Z');

const debit = (i: number, key?: string): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id: `req_${i}`, endpoint: 'screener', channel: 'rest', cost: 1, ...(key === undefined ? {} : { key_id: key }) },
});

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
    const record = (events: LedgerEvent[]) => h.applyBatch(...packDebits(events).map((e) => h.event(ledgerStream('acc-1'), e.type, e.data)));
    const opened = decideAll(initialLedgerState, [{ type: 'OpenLedger', data: { account_id: 'acc-1', tier: 'hobbyist', pro: false } }], MAY);
    const may = decideAll(opened.state, [debit(1, 'key_a'), debit(2, 'key_b'), debit(3, 'key_a'), debit(4)], MAY);
    await record([...opened.events, ...may.events]);
    const later = decideAll(may.state, [debit(5, 'key_b')], LATER);
    await record(later.events);
    const june = decideAll(later.state, [debit(6)], JUNE);
    await record(june.events);

    expect(h.snapshot()['key_last_used']).to.deep.equal({
      key_a: { key_id: 'key_a', account_id: 'acc-1', last_used_at: MAY.toISOString() },
      key_b: { key_id: 'key_b', account_id: 'acc-1', last_used_at: LATER.toISOString() },
    });
  });

  it('ignores malformed data and events of other streams without failing', async () => {
    const h = new ProjectionHarness(keyUsageProjection);
    await h.apply(
      h.event('account-acc-1', 'CreditsDebited', { key_id: 'key_x', at: MAY.toISOString() }),
      h.event(ledgerStream('acc-1'), 'CreditsDebited', null),
      h.event(ledgerStream('acc-1'), 'CreditsDebitedBatch', { at: MAY.toISOString(), calls: { key_id: 'key_y' } }),
      h.event(ledgerStream('acc-1'), 'CreditsDebited', { key_id: 42, at: MAY.toISOString() }),
    );
    expect(h.snapshot()['key_last_used'] ?? {}).to.deep.equal({});
  });
});
