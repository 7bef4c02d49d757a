import { expect } from 'chai';
import { decideAndFold } from '../../commands/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { foldLedger, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import {
  computeHash,
  debitLines,
  ledgerLines,
  lineCount,
  packDebits,
  verifyChain,
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

describe('Debits that name their key, stored as one event per batch', () => {
  const byKey = (i: number, key: string | undefined): LedgerCommand => ({
    type: 'DebitCredits',
    data: { request_id: `req_${i}`, endpoint: 'screener', channel: 'rest', cost: 10, ...(key === undefined ? {} : { key_id: key }) },
  });
  const start = opened();

  it('packs them with a key column, and gives back exactly the events decided, keys and hashes included', () => {
    const decided = decideAll(start, [byKey(1, 'key_a'), byKey(2, 'key_b'), byKey(3, 'key_a')], MAY);
    const packed = packDebits(decided.events);
    expect(packed.map((e) => e.type)).to.deep.equal(['CreditsDebitedBatch']);
    expect((packed[0] as CreditsDebitedBatch).data.calls.key_id).to.deep.equal(['key_a', 'key_b', 'key_a']);
    expect(packed.flatMap(ledgerLines)).to.deep.equal(decided.events);
    expect(verifyChain(packed.flatMap(ledgerLines), start.last_hash)).to.equal(null);
  });

  it('keeps debits with a key and without one in batches of their own', () => {
    const decided = decideAll(start, [byKey(1, 'key_a'), byKey(2, 'key_a'), byKey(3, undefined), byKey(4, undefined)], MAY);
    const packed = packDebits(decided.events);
    expect(packed.map((e) => [e.type, lineCount(e), (e as CreditsDebitedBatch).data.calls?.key_id ?? null])).to.deep.equal([
      ['CreditsDebitedBatch', 2, ['key_a', 'key_a']],
      ['CreditsDebitedBatch', 2, null],
    ]);
    expect(packed.flatMap(ledgerLines)).to.deep.equal(decided.events);
  });

  it('reads a batch whose key column does not match its calls as malformed', () => {
    const decided = decideAll(start, [byKey(1, 'key_a'), byKey(2, 'key_a')], MAY);
    const batch = packDebits(decided.events)[0] as CreditsDebitedBatch;
    expect(debitLines({ ...batch.data, calls: { ...batch.data.calls, key_id: ['key_a'] } })).to.equal(null);
  });
});
