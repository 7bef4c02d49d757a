import { expect } from 'chai';
import { decideAndFold } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { foldLedger, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import {
  callKeysOf,
  computeHash,
  debitLines,
  ledgerLines,
  lineCount,
  packDebits,
  verifyChain,
  withCallKeys,
  type CreditsDebitedBatch,
  type LedgerEvent,
} from '../../src/domain/ledger/ledger.events.js';

const MAY = new Date('2024-05-15T12:00:00Z');
const LATER = new Date('2024-05-15T12:00:01Z');

/** Commands decided one after another on the state the previous left, as the ledger service decides a batch. */
function decideAll(start: LedgerState, commands: LedgerCommand[], now: Date): { events: LedgerEvent[]; state: LedgerState } {
  let state = start;
  const events: LedgerEvent[] = [];
  for (const c of commands) {
    const d = decideAndFold(state, c, now);
    events.push(...d.events);
    state = d.state;
  }
  return { events, state };
}

const debit = (i: number, cost = 100): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id: `req_${i}`, endpoint: 'screener', channel: i % 2 ? 'mcp' : 'rest', cost },
});

/** A free account with a pack: its debits draw the allowance, then prepaid; alerts fire on the way. */
function opened(): LedgerState {
  return decideAll(
    initialLedgerState,
    [
      { type: 'OpenLedger', data: { account_id: 'acc-1', tier: 'free', pro: false } },
      { type: 'PurchasePack', data: { pack_id: 'p', credits: 500 } },
    ],
    MAY,
  ).state;
}

describe('Debits stored as one event per batch', () => {
  const start = opened();
  const decided = decideAll(start, Array.from({ length: 12 }, (_, i) => debit(i)), MAY);
  const packed = packDebits(decided.events);

  it('packs each run of two or more debits into one event, leaving the alerts between them where they were', () => {
    expect(decided.events.filter((e) => e.type === 'UsageAlertRaised')).to.have.length(3);
    expect(packed.map((e) => [e.type, lineCount(e)])).to.deep.equal([
      ['CreditsDebitedBatch', 8],
      ['UsageAlertRaised', 1],
      ['CreditsDebited', 1],
      ['UsageAlertRaised', 1],
      ['CreditsDebited', 1],
      ['UsageAlertRaised', 1],
      ['CreditsDebitedBatch', 2],
    ]);
  });

  it('gives back exactly the events decided, each with its own data and hash', () => {
    expect(packed.flatMap(ledgerLines)).to.deep.equal(decided.events);
    for (const line of packed.flatMap(ledgerLines)) expect(computeHash(line.type, line.data)).to.equal(line.data.hash);
  });

  it('chains the batch as its calls were chained: prev_hash before the first, hash of the last', () => {
    const batch = packed[0] as CreditsDebitedBatch;
    expect(batch.data.prev_hash).to.equal(start.last_hash);
    expect(batch.data.hash).to.equal(decided.events[7]!.data.hash);
    expect(verifyChain([...packed], start.last_hash)).to.equal(null);
  });

  it('folds to the state the calls one by one fold to', () => {
    expect(foldLedger(packed, start)).to.deep.equal(decided.state);
    expect(foldLedger(packed, start)).to.deep.equal(foldLedger(decided.events, start));
    expect(decided.state.prepaid).to.equal(300);
  });

  it('detects a call altered inside a batch, and a malformed batch', () => {
    const altered = structuredClone(packed);
    (altered[0] as CreditsDebitedBatch).data.calls.from_allowance[5] = 0;
    expect(verifyChain(altered, start.last_hash)).to.include({ index: 0, reason: 'hash_mismatch' });
    const swapped = structuredClone(packed);
    const ids = (swapped[0] as CreditsDebitedBatch).data.calls.request_id;
    [ids[0], ids[1]] = [ids[1]!, ids[0]!];
    expect(verifyChain(swapped, start.last_hash)).to.include({ index: 0, reason: 'hash_mismatch' });
    const short = structuredClone(packed);
    (short[0] as CreditsDebitedBatch).data.calls.cost.pop();
    expect(debitLines((short[0] as CreditsDebitedBatch).data)).to.equal(null);
    expect(lineCount(short[0]!)).to.equal(0);
    expect(verifyChain(short, start.last_hash)).to.include({ index: 0, reason: 'hash_mismatch' });
  });

  it('keeps a single debit, and debits decided at different instants, as events of their own', () => {
    const one = decideAll(start, [debit(1)], MAY).events;
    expect(packDebits(one)).to.deep.equal(one);
    const first = decideAll(start, [debit(1), debit(2)], MAY);
    const second = decideAll(first.state, [debit(3), debit(4)], LATER);
    const both = packDebits([...first.events, ...second.events]);
    expect(both.map((e) => [e.type, lineCount(e)])).to.deep.equal([
      ['CreditsDebitedBatch', 2],
      ['CreditsDebitedBatch', 2],
    ]);
    expect(both.flatMap(ledgerLines)).to.deep.equal([...first.events, ...second.events]);
  });
});

describe("Each call's key beside its line, in the appended event's metadata", () => {
  const start = opened();
  const decided = decideAll(start, [debit(1), debit(2), debit(3)], MAY).events;
  const later = decideAll(start, [debit(4)], LATER).events;
  const keyOf = new Map([
    ['req_1', 'key_a'],
    ['req_3', 'key_b'],
    ['req_4', 'key_a'],
  ]);

  it("puts a batch's keys in its calls' order ('' for a call without one), a single debit's key as key_id, and changes no data", () => {
    const packed = packDebits(decided);
    const appended = withCallKeys(packed, keyOf);
    expect(appended.map((e) => e.type)).to.deep.equal(['CreditsDebitedBatch']);
    expect(appended[0]!.metadata).to.deep.equal({ key_ids: ['key_a', '', 'key_b'] });
    expect(appended.map((e) => e.data)).to.deep.equal(packed.map((e) => e.data));
    expect(callKeysOf(appended[0]!)).to.deep.equal(['key_a', 'key_b']);

    const single = withCallKeys(packDebits(later), keyOf);
    expect(single.map((e) => [e.type, e.metadata])).to.deep.equal([['CreditsDebited', { key_id: 'key_a' }]]);
    expect(callKeysOf(single[0]!)).to.deep.equal(['key_a']);
  });

  it('leaves events alone when no call names a key, and reads no key from events written before', () => {
    const packed = packDebits(decided);
    expect(withCallKeys(packed, new Map())).to.equal(packed);
    expect(withCallKeys(packed, new Map([['req_9', 'key_z']]))[0]).to.equal(packed[0]);
    expect(callKeysOf({ type: 'CreditsDebitedBatch', metadata: {} })).to.deep.equal([]);
    expect(callKeysOf({ type: 'CreditsDebited', metadata: { key_id: 7 } })).to.deep.equal([]);
    expect(callKeysOf({ type: 'PackPurchased', metadata: { key_id: 'key_a' } })).to.deep.equal([]);
  });
});
