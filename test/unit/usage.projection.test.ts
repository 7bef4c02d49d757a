import { expect } from 'chai';
import { ledgerDecider } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';

const { decide } = ledgerDecider;
import { evolve, foldLedger, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { usageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { GENESIS_HASH, ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import {
  balanceKey,
  entryKey,
  replayUsage,
  usageProjection,
  RANGE_LINES,
  type LedgerEntryDoc,
  type UsageBalanceDoc,
} from '../../projections/usage/usage.projection.js';
import { statementLines, type LedgerEntryResponse as LedgerLine } from '../../queries/shared/ledger-lines.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Tier } from '../../src/domain/plans.js';
import { ProjectionHarness } from '../support/projection-harness.js';

/** Drives the real decider and records its events as the store would (revision = seq). */
class Ledger {
  state: LedgerState = initialLedgerState;
  readonly recorded: RecordedEvent[] = [];

  constructor(
    private readonly h: ProjectionHarness,
    readonly accountId: string,
  ) {}

  run(command: LedgerCommand, now: string): RecordedEvent[] {
    const out = decide(this.state, command, new Date(now)).map((e) => {
      this.state = evolve(this.state, e);
      const recorded = { ...this.h.event(ledgerStream(this.accountId), e.type, e.data), revision: this.recorded.length };
      this.recorded.push(recorded);
      return recorded;
    });
    return out;
  }
}

const open = (account_id: string, tier: Tier, pro = false): LedgerCommand => ({ type: 'OpenLedger', data: { account_id, tier, pro } });
const debit = (cost: number, request_id: string, channel: 'rest' | 'mcp' = 'rest'): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id, endpoint: 'screener', channel, cost },
});
const pack = (credits: number, pack_id = 'pack-1'): LedgerCommand => ({ type: 'PurchasePack', data: { pack_id, credits } });

const MAY = '2024-05-10T10:00:00.000Z';
const JUNE = '2024-06-03T09:00:00.000Z';
const JULY = '2024-07-02T08:00:00.000Z';

/** The first statement line of an entry, read from the recorded "log". */
const lineOf = (l: Ledger, e: LedgerEntryDoc): LedgerLine => statementLines(e, l.recorded.slice(e.revision, e.revision + e.events))[0]!;

const docs = <T>(h: ProjectionHarness, collection: string) => [...(h.docs.get(collection)?.values() ?? [])] as T[];
const balance = (h: ProjectionHarness, account: string, period: string) =>
  h.docs.get('usage_balances')?.get(balanceKey(account, period)) as UsageBalanceDoc | undefined;

/** A hobbyist ledger through May and June: packs, alerts, overage; then a cancellation. */
function scripted() {
  const h = new ProjectionHarness(usageProjection);
  const l = new Ledger(h, 'acc-1');
  l.run(open('acc-1', 'free'), MAY);
  l.run(debit(600, 'r-1'), MAY);
  l.run(pack(500), MAY);
  l.run(debit(350, 'r-2'), MAY); // 950 of 1,000: alerts 75 and 90
  l.run(debit(200, 'r-3', 'mcp'), MAY); // 50 allowance + 150 prepaid: alert 100
  const mayState = l.state;
  l.run({ type: 'SetPlan', data: { tier: 'hobbyist' } }, JUNE);
  l.run({ type: 'SwitchOverage', data: { on: true } }, JUNE);
  l.run(debit(24_000, 'r-4'), JUNE);
  l.run(debit(1_500, 'r-5'), JUNE); // 1,000 allowance + 350 prepaid + 150 overage
  l.run(debit(100, 'r-6', 'mcp'), JUNE);
  l.run({ type: 'CancelPlan' }, JUNE);
  const juneState = l.state;
  l.run(debit(10, 'r-7'), JULY); // the plan falls back to free, then July opens
  return { h, l, mayState, juneState };
}

describe('Usage projection', () => {
  describe('When a ledger runs through a month with a pack and alerts', () => {
    const { h, l, mayState } = scripted();
    before(() => h.apply(...l.recorded));

    it("keeps the month's figures equal to usageFigures of the folded ledger", () => {
      const f = usageFigures(mayState, new Date(MAY));
      expect(balance(h, 'acc-1', '2024-05')).to.deep.equal({
        account_id: 'acc-1',
        period: '2024-05',
        tier: f.tier,
        pro: f.pro_member,
        allow_overage: f.allow_overage,
        allowance: f.monthly_allowance,
        used_allowance: mayState.used_allowance,
        used_this_month: f.used_this_month,
        credits_remaining: f.credits_remaining,
        overage_credits: f.overage_credits,
        overage_cost_usd: f.overage_cost_usd,
        prepaid_credits: f.prepaid_credits,
        debits: 3,
        credits_debited: 1_150,
        alerts: [75, 90, 100],
        resets_at: '2024-06-01T00:00:00.000Z',
      });
      expect(balance(h, 'acc-1', '2024-05')).to.include({
        tier: 'free',
        allowance: 1_000,
        used_this_month: 1_000,
        credits_remaining: 0,
        prepaid_credits: 350,
      });
    });

    it('lists one entry per event, its seq its line number (the revision, as no event here is a batch), with the split of each charge', () => {
      const entries = docs<LedgerEntryDoc>(h, 'ledger_entries');
      expect(entries.map((e) => e.seq)).to.deep.equal(l.recorded.map((e) => e.revision));
      const seq = l.recorded.findIndex((e) => (e.data as { request_id?: string }).request_id === 'r-3');
      const r3 = h.docs.get('ledger_entries')!.get(entryKey('acc-1', seq)) as LedgerEntryDoc;
      // Stored: where the event's lines are in the log, and what the entry is found by; never its data.
      expect(r3).to.deep.equal({ account_id: 'acc-1', seq, lines: 1, revision: seq, events: 1, period: '2024-05', kind: 'CreditsDebited' });
      // Shown: every field of the line, derived from the event's data as the log holds it.
      expect(lineOf(l, r3).data).to.deep.equal(l.recorded[seq]!.data);
      expect(lineOf(l, r3)).to.include({
        period: '2024-05',
        kind: 'CreditsDebited',
        request_id: 'r-3',
        endpoint: 'screener',
        channel: 'mcp',
        cost: 200,
        from_allowance: 50,
        from_prepaid: 150,
        from_overage: 0,
        credits: null,
        detail: '200 credits for screener (mcp): 50 from the allowance, 150 from prepaid',
      });
    });

    it('chains the entries: each prev_hash is the hash of the entry before, the first the genesis hash', () => {
      const entries = docs<LedgerEntryDoc>(h, 'ledger_entries')
        .sort((a, b) => a.seq - b.seq)
        .map((e) => lineOf(l, e));
      expect(entries[0]!.prev_hash).to.equal(GENESIS_HASH);
      for (let i = 1; i < entries.length; i++) expect(entries[i]!.prev_hash).to.equal(entries[i - 1]!.hash);
    });

    it('describes the other events in words', () => {
      const details = docs<LedgerEntryDoc>(h, 'ledger_entries')
        .filter((e) => e.kind !== 'CreditsDebited')
        .map((e) => lineOf(l, e).detail);
      expect(details).to.include.members([
        'Ledger opened on the free tier, overage off',
        'Period 2024-05 opened: allowance of 1000 credits',
        'Pack pack-1: 500 prepaid credits added',
        '75% of the allowance used (950 of 1000) in 2024-05',
        'Plan changed to hobbyist',
        'Overage switched on',
        'Plan cancelled; falls back to free at 2024-07-01T00:00:00.000Z',
        'Plan fell back to free at the end of the cancelled subscription',
      ]);
      const packEntry = docs<LedgerEntryDoc>(h, 'ledger_entries').find((e) => e.kind === 'PackPurchased')!;
      expect(lineOf(l, packEntry)).to.include({ credits: 500, cost: null, request_id: null });
    });
  });

  describe('When a new month begins', () => {
    const { h, l, juneState } = scripted();
    before(() => h.apply(...l.recorded));

    it('starts a fresh document with the prepaid balance carried over and overage accrued in it', () => {
      const f = usageFigures(juneState, new Date(JUNE));
      expect(balance(h, 'acc-1', '2024-06')).to.deep.include({
        tier: 'hobbyist',
        allow_overage: true,
        allowance: 25_000,
        used_allowance: 25_000,
        used_this_month: 25_250,
        credits_remaining: -250,
        overage_credits: 250,
        overage_cost_usd: f.overage_cost_usd,
        prepaid_credits: 0,
        debits: 3,
        credits_debited: 25_600,
        alerts: [75, 90, 100],
      });
      expect(f.overage_cost_usd).to.equal(0.13);
    });

    it('leaves the finished month as it stood after its last event (an upgrade in June shows in June)', () => {
      expect(balance(h, 'acc-1', '2024-05')).to.include({ tier: 'free', allowance: 1_000, debits: 3 });
    });

    it('shows the fall-back of a cancelled plan on the month it takes effect in, not on the finished one', () => {
      expect(balance(h, 'acc-1', '2024-06')).to.include({ tier: 'hobbyist', allow_overage: true });
      expect(balance(h, 'acc-1', '2024-07')).to.deep.include({
        tier: 'free',
        allow_overage: false,
        allowance: 1_000,
        used_this_month: 10,
        debits: 1,
        credits_debited: 10,
        alerts: [],
        prepaid_credits: 0,
      });
      const fallBack = docs<LedgerEntryDoc>(h, 'ledger_entries').find((e) => e.kind === 'PlanChanged' && lineOf(l, e).detail.includes('fell back'))!;
      expect(fallBack.period).to.equal('2024-07');
    });

    it('builds exactly what a replay of the stream gives (what the audit recomputes)', () => {
      const replay = replayUsage('acc-1', l.recorded);
      expect(docs<UsageBalanceDoc>(h, 'usage_balances').sort((a, b) => a.period.localeCompare(b.period))).to.deep.equal(replay.balances);
      expect(docs<LedgerEntryDoc>(h, 'ledger_entries').sort((a, b) => a.seq - b.seq)).to.deep.equal(replay.entries);
      expect(h.docs.get('ledger_states')!.get('acc-1')).to.deep.equal(replay.fold);
      expect(replay.fold.state).to.deep.equal(foldLedger(l.recorded));
    });
  });

  describe('When events are applied again', () => {
    it('changes nothing, whether the whole stream or a single earlier event is re-delivered', async () => {
      const { h, l } = scripted();
      await h.apply(...l.recorded);
      const once = h.snapshot();
      await h.apply(...l.recorded);
      await h.apply(l.recorded[3]!, l.recorded[1]!);
      expect(h.snapshot()).to.deep.equal(once);
    });
  });

  describe('When the account is unmetered (enterprise)', () => {
    it('shows a null allowance and null credits remaining, and raises no alerts', async () => {
      const h = new ProjectionHarness(usageProjection);
      const l = new Ledger(h, 'acc-ent');
      l.run(open('acc-ent', 'enterprise'), MAY);
      l.run(debit(5_000_000, 'big'), MAY);
      await h.apply(...l.recorded);
      expect(balance(h, 'acc-ent', '2024-05')).to.deep.include({
        allowance: null,
        credits_remaining: null,
        used_this_month: 5_000_000,
        overage_credits: 0,
        debits: 1,
        alerts: [],
      });
    });
  });

  describe('When an event it cannot use arrives', () => {
    it('ignores ledger-named events of other streams and malformed data without failing', async () => {
      const h = new ProjectionHarness(usageProjection);
      await h.apply(
        h.event('account-acc-9', 'PlanChanged', { tier: 'quant', reason: 'set', at: MAY }),
        { ...h.event('ledger-acc-9', 'CreditsDebited', null), revision: 0 },
      );
      expect(h.docs.get('usage_balances')?.size ?? 0).to.equal(0);
      expect(h.docs.get('ledger_entries')?.size ?? 0).to.equal(0);
      expect(h.docs.get('ledger_states')!.get('acc-9')).to.include({ seq: 0 });
    });
  });

  describe('When calls are charged one at a time (ranges of debits)', () => {
    const h = new ProjectionHarness(usageProjection);
    const l = new Ledger(h, 'acc-r');
    l.run(open('acc-r', 'enterprise'), MAY);
    for (let i = 0; i < RANGE_LINES + 30; i++) l.run(debit(1, `r-${i}`), MAY);
    l.run(pack(500), MAY);
    for (let i = 0; i < 3; i++) l.run(debit(1, `s-${i}`), JUNE);
    before(() => h.apply(...l.recorded));
    const entries = () => docs<LedgerEntryDoc>(h, 'ledger_entries').sort((a, b) => a.seq - b.seq);

    it('keeps a run of debits of one month as one entry, up to RANGE_LINES lines, and starts another at a pack or a new month', () => {
      const debitsFrom = l.recorded.findIndex((e) => e.type === 'CreditsDebited');
      const packAt = l.recorded.findIndex((e) => e.type === 'PackPurchased');
      const ranges = entries().filter((e) => e.kind === 'CreditsDebited');
      expect(ranges.map((e) => [e.revision, e.events, e.lines, e.period])).to.deep.equal([
        [debitsFrom, RANGE_LINES, RANGE_LINES, '2024-05'],
        [debitsFrom + RANGE_LINES, 30, 30, '2024-05'],
        [l.recorded.length - 3, 3, 3, '2024-06'],
      ]);
      expect(entries().find((e) => e.kind === 'PackPurchased')).to.include({ revision: packAt, events: 1, seq: packAt });
      // Every event is in exactly one entry, in order.
      const covered = entries().flatMap((e) => Array.from({ length: e.events }, (_, i) => e.revision + i));
      expect(covered).to.deep.equal(l.recorded.map((e) => e.revision));
    });

    it("gives each line of a range its own seq, data and hash, chained", () => {
      const [range] = entries().filter((e) => e.kind === 'CreditsDebited');
      const lines = statementLines(range!, l.recorded.slice(range!.revision, range!.revision + range!.events));
      expect(lines.map((x) => x.seq)).to.deep.equal(Array.from({ length: RANGE_LINES }, (_, i) => range!.seq + i));
      expect(lines.map((x) => x.data)).to.deep.equal(l.recorded.slice(range!.revision, range!.revision + RANGE_LINES).map((e) => e.data));
      for (let i = 1; i < lines.length; i++) expect(lines[i]!.prev_hash).to.equal(lines[i - 1]!.hash);
    });

    it('builds exactly what a replay of the stream gives', () => {
      expect(entries()).to.deep.equal(replayUsage('acc-r', l.recorded).entries);
    });
  });
});
