import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import type { Decision } from '../../src/core/decider.js';
import type { DebitCredits, LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { evolveDecision, initialDecisionState, ledgerBatchDecider, type BatchOutcome, type LedgerDecisionState } from '../../src/domain/ledger/ledger.decider.js';
import { ledgerLines, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { spentAt, type KeyBudget } from '../../src/domain/ledger/key-spend.js';

type Recorded = LedgerEvent & { metadata?: Record<string, unknown> };

/** A ledger as the handler keeps it: the decisions' events appended, and the state they decided on. */
class Ledger {
  log: Recorded[] = [];
  state: LedgerDecisionState = initialDecisionState();

  constructor(tier: 'quant' | 'free' = 'quant', now = new Date('2024-05-15T12:00:00Z')) {
    this.batch([{ type: 'OpenLedger', data: { account_id: 'acct_k', tier, pro: false } }], now);
  }

  /** The commands decided as one batch at `now`: each one's outcome. */
  batch(commands: readonly LedgerCommand[], now: Date): BatchOutcome[] {
    const d = ledgerBatchDecider.decide(this.state, commands, now) as Decision<LedgerDecisionState, Recorded, BatchOutcome[]>;
    this.log.push(...d.events);
    this.state = d.state!;
    return d.result!;
  }

  /** One debit alone; throws its refusal. */
  debit(command: DebitCredits, now: Date): BatchOutcome & { ok: true } {
    const [o] = this.batch([command], now);
    if (!o!.ok) throw o!.error;
    return o as BatchOutcome & { ok: true };
  }

  /** Credits the ledger's lines charged to `key` (the batches' metadata names each call's key). */
  charged(key: string): number {
    let sum = 0;
    for (const e of this.log) {
      const keys = e.type === 'CreditsDebitedBatch' ? (e.metadata?.['key_ids'] as string[]) : e.type === 'CreditsDebited' ? [e.metadata?.['key_id'] as string] : [];
      ledgerLines(e).forEach((line, i) => {
        if (line.type === 'CreditsDebited' && keys?.[i] === key) sum += line.data.cost;
      });
    }
    return sum;
  }
}

let n = 0;
const debit = (key: string, cost: number, budget?: KeyBudget): DebitCredits => ({
  type: 'DebitCredits',
  data: { request_id: `req_${++n}`, endpoint: 'screener', channel: 'rest', cost, key_id: key, ...(budget ? { key_budget: budget } : {}) },
});
const refusal = (run: () => unknown): AppError => {
  try {
    run();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  expect.fail('expected a refusal');
};
const at = (iso: string) => new Date(iso);

describe('Key credit limits, decided with the debit', () => {
  describe('When a key has a daily limit', () => {
    const daily: KeyBudget = { daily: 10, monthly: null };

    it('charges up to the limit exactly, then refuses with 429 key_budget_exhausted and charges nothing', () => {
      const l = new Ledger();
      const noon = at('2024-05-15T12:00:00Z');
      expect(l.debit(debit('key_a', 4, daily), noon).key_budget_remaining).to.equal(6);
      expect(l.debit(debit('key_a', 6, daily), noon).key_budget_remaining).to.equal(0);
      const before = l.log.length;
      const err = refusal(() => l.debit(debit('key_a', 1, daily), noon));
      expect(err.status).to.equal(429);
      expect(err.code).to.equal('key_budget_exhausted');
      expect(err.extensions).to.deep.equal({ key_id: 'key_a', limit: 10, window: 'day', spent: 10, cost: 1, resets_at: '2024-05-16T00:00:00.000Z', retry_after_seconds: 12 * 3600 });
      expect(l.log.length).to.equal(before);
      expect(l.charged('key_a')).to.equal(10);
    });

    it('refuses a call that alone costs more than the limit, and says so', () => {
      const err = refusal(() => new Ledger().debit(debit('key_a', 11, daily), at('2024-05-15T12:00:00Z')));
      expect(err.code).to.equal('key_budget_exhausted');
      expect(err.detail).to.match(/alone costs more than the limit/);
    });

    it("leaves the account's other keys alone: a key without limits still spends", () => {
      const l = new Ledger();
      const noon = at('2024-05-15T12:00:00Z');
      l.debit(debit('key_a', 10, daily), noon);
      expect(refusal(() => l.debit(debit('key_a', 2, daily), noon)).code).to.equal('key_budget_exhausted');
      const other = l.debit(debit('key_b', 500), noon);
      expect(other.events).to.have.length.greaterThan(0);
      expect(other.key_budget_remaining).to.equal(undefined);
      expect(l.charged('key_b')).to.equal(500);
    });

    it('starts again at 00:00 UTC (the clock given to the decision), not before', () => {
      const l = new Ledger();
      l.debit(debit('key_a', 10, daily), at('2024-05-15T08:00:00Z'));
      const err = refusal(() => l.debit(debit('key_a', 1, daily), at('2024-05-15T23:59:59.999Z')));
      expect(err.extensions['retry_after_seconds']).to.equal(1);
      expect(l.debit(debit('key_a', 10, daily), at('2024-05-16T00:00:00Z')).key_budget_remaining).to.equal(0);
      expect(l.charged('key_a')).to.equal(20);
    });

    it('counts what the key spent before the limit was set (the spend of every key is kept)', () => {
      const l = new Ledger();
      const noon = at('2024-05-15T12:00:00Z');
      l.debit(debit('key_a', 8), noon);
      expect(l.debit(debit('key_a', 2, daily), noon).key_budget_remaining).to.equal(0);
      expect(refusal(() => l.debit(debit('key_a', 2, daily), noon)).extensions['spent']).to.equal(10);
    });
  });

  describe('When a key has a monthly limit', () => {
    const monthly: KeyBudget = { daily: null, monthly: 25 };

    it('adds the days of the month up, and resets on the 1st at 00:00 UTC', () => {
      const l = new Ledger();
      l.debit(debit('key_m', 10, monthly), at('2024-05-29T12:00:00Z'));
      l.debit(debit('key_m', 10, monthly), at('2024-05-30T12:00:00Z'));
      const err = refusal(() => l.debit(debit('key_m', 10, monthly), at('2024-05-31T12:00:00Z')));
      expect(err.extensions).to.include({ window: 'month', limit: 25, spent: 20, resets_at: '2024-06-01T00:00:00.000Z', retry_after_seconds: 12 * 3600 });
      expect(l.debit(debit('key_m', 5, monthly), at('2024-05-31T23:00:00Z')).key_budget_remaining).to.equal(0);
      expect(l.debit(debit('key_m', 25, monthly), at('2024-06-01T00:00:00Z')).key_budget_remaining).to.equal(0);
    });

    it('with a daily limit too: the smaller rest is what remains, and a spent month is the refusal named (its reset is the later)', () => {
      const both: KeyBudget = { daily: 10, monthly: 25 };
      const l = new Ledger();
      expect(l.debit(debit('key_m', 4, both), at('2024-05-30T12:00:00Z')).key_budget_remaining).to.equal(6);
      l.debit(debit('key_m', 6, both), at('2024-05-30T13:00:00Z'));
      expect(l.debit(debit('key_m', 10, both), at('2024-05-31T01:00:00Z')).key_budget_remaining).to.equal(0);
      // 6 more fits neither the day (10 of 10 spent) nor the month (20 of 25): the month is named, its reset is the later.
      expect(refusal(() => l.debit(debit('key_m', 6, both), at('2024-05-31T02:00:00Z'))).extensions['window']).to.equal('month');
      expect(l.debit(debit('key_m', 5, both), at('2024-06-01T00:00:00Z')).key_budget_remaining).to.equal(5);
    });
  });

  describe('When the commands of one batch together exceed the limit', () => {
    it('charges those that fit in their order and refuses the rest, as if decided one by one', () => {
      const l = new Ledger();
      const daily: KeyBudget = { daily: 10, monthly: null };
      const noon = at('2024-05-15T12:00:00Z');
      const commands = [debit('key_a', 3, daily), debit('key_b', 7), debit('key_a', 3, daily), debit('key_a', 3, daily), debit('key_a', 3, daily), debit('key_a', 1, daily)];
      const outcomes = l.batch(commands, noon);
      expect(outcomes.map((o) => (o.ok ? 'ok' : (o.error as AppError).code))).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'key_budget_exhausted', 'ok']);
      expect(outcomes.map((o) => (o.ok ? o.key_budget_remaining : null))).to.deep.equal([7, undefined, 4, 1, null, 0]);
      expect(l.charged('key_a')).to.equal(10);
      expect(l.charged('key_b')).to.equal(7);
      // The batch is one event whose metadata names each call's key.
      expect(l.log.at(-1)!.type).to.equal('CreditsDebitedBatch');
    });

    it('does not count a debit refused for the account\'s credits against the key', () => {
      const l = new Ledger('free');
      const budget: KeyBudget = { daily: 5_000, monthly: null };
      const noon = at('2024-05-15T12:00:00Z');
      const outcomes = l.batch([debit('key_a', 900, budget), debit('key_a', 900, budget), debit('key_a', 50, budget)], noon);
      expect(outcomes.map((o) => (o.ok ? 'ok' : (o.error as AppError).code))).to.deep.equal(['ok', 'credits_exhausted', 'ok']);
      expect(spentAt(l.state.keys, 'key_a', noon.toISOString())).to.deep.equal({ today: 950, month: 950 });
    });
  });

  describe('The spend is part of the state the stream folds to', () => {
    it('equals, folded from the log (the debits and their metadata), the spend the decisions left', () => {
      const l = new Ledger();
      const budget: KeyBudget = { daily: 100, monthly: 1_000 };
      l.batch([debit('key_a', 30, budget), debit('key_b', 5), debit('key_a', 30, budget)], at('2024-05-30T12:00:00Z'));
      l.debit(debit('key_a', 40, budget), at('2024-05-31T12:00:00Z'));
      l.debit(debit('key_b', 3), at('2024-06-01T09:00:00Z'));
      const folded = l.log.reduce(evolveDecision, initialDecisionState());
      expect(folded.keys).to.deep.equal(l.state.keys);
      expect(folded.ledger).to.deep.equal(foldLedger(l.log));
      // June: key_a's May spend is gone from the state, key_b's June spend is there.
      expect(Object.keys(folded.keys)).to.deep.equal(['key_b']);
      expect(spentAt(folded.keys, 'key_b', '2024-06-01T10:00:00Z')).to.deep.equal({ today: 3, month: 3 });
    });

    it('decides the same after a restart from a snapshot of the state as without one', () => {
      const l = new Ledger();
      const budget: KeyBudget = { daily: 50, monthly: null };
      const noon = at('2024-05-15T12:00:00Z');
      for (let i = 0; i < 8; i++) l.debit(debit('key_a', 5, budget), noon);
      // A snapshot is the state as JSON in the read store; the next decisions start from it.
      const snapshot = JSON.parse(JSON.stringify(l.state)) as LedgerDecisionState;
      const restarted = new Ledger();
      restarted.state = snapshot;
      const a = restarted.batch([debit('key_a', 5, budget), debit('key_a', 5, budget), debit('key_a', 5, budget)], noon);
      expect(a.map((o) => o.ok)).to.deep.equal([true, true, false]);
    });
  });
});
