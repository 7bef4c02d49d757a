import { expect } from 'chai';
import { creditsRemainingHeader, usageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { decideAndFold, ledgerDecider } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { carriedOf, foldLedger, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import {
  GENESIS_HASH,
  computeHash,
  sealEvent,
  verifyChain,
  type LedgerEvent,
  type LedgerEventBody,
  type LedgerEventType,
} from '../../src/domain/ledger/ledger.events.js';
import type { Tier } from '../../src/domain/plans.js';
import { deciderSpec } from '../support/decider-spec.js';

const { decide } = ledgerDecider;

// ----- fixtures ------------------------------------------------------------------------------

const MAY = new Date('2024-05-15T12:00:00Z');
const JUNE = new Date('2024-06-03T09:00:00Z');
const JUNE_1 = '2024-06-01T00:00:00.000Z';
const JULY_1 = '2024-07-01T00:00:00.000Z';

/** Expectations leave out `at` and the hash chain; the chain has its own tests. */
const unchained = (e: LedgerEvent) => {
  const { at: _at, prev_hash: _p, hash: _h, ...data } = e.data;
  return { type: e.type, data };
};
const spec = deciderSpec(ledgerDecider, { normalize: unchained });

type Step = { type: LedgerEventType; body: unknown };
const step = <T extends LedgerEventType>(type: T, body: LedgerEventBody<T>): Step => ({ type, body });

/** Past events as the store would hold them: sealed and chained. */
function history(...steps: Step[]): LedgerEvent[] {
  let prev = GENESIS_HASH;
  return steps.map((s) => {
    const e = sealEvent(s.type, s.body as never, '2024-05-01T00:00:00.000Z', prev);
    prev = e.data.hash;
    return e;
  });
}
const stateOf = (...steps: Step[]): LedgerState => foldLedger(history(...steps));

const opened = (tier: Tier, pro = false) => step('LedgerOpened', { account_id: 'acc-1', tier, pro, allow_overage: false });
const mayOpened = (allowance: number | null) => step('AllowancePeriodOpened', { period: '2024-05', allowance, resets_at: JUNE_1 });
const spent = (from_allowance: number, from_prepaid = 0, from_overage = 0) =>
  step('CreditsDebited', {
    request_id: 'r-earlier',
    endpoint: 'scores',
    channel: 'rest',
    cost: from_allowance + from_prepaid + from_overage,
    from_allowance,
    from_prepaid,
    from_overage,
    period: '2024-05',
  });
const packBought = (credits: number) => step('PackPurchased', { pack_id: 'pack-1', credits });
const overageOn = step('OverageSwitched', { allow_overage: true });
const alerted = (threshold: 75 | 90 | 100, used: number, allowance: number) =>
  step('UsageAlertRaised', { period: '2024-05', threshold, used, allowance });

const debit = (cost: number, channel: 'rest' | 'mcp' = 'rest'): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id: 'r-1', endpoint: 'screener', channel, cost },
});
const charged = (from_allowance: number, from_prepaid = 0, from_overage = 0, period = '2024-05', channel = 'rest') => ({
  type: 'CreditsDebited',
  data: {
    request_id: 'r-1',
    endpoint: 'screener',
    channel,
    cost: from_allowance + from_prepaid + from_overage,
    from_allowance,
    from_prepaid,
    from_overage,
    period,
  },
});
const alert = (threshold: number, used: number, allowance: number, period = '2024-05') => ({
  type: 'UsageAlertRaised',
  data: { period, threshold, used, allowance },
});
/** A month's closing event: it carries the state the month ended in. */
const closed = (period: string, endedIn: LedgerEvent[]) => ({ type: 'LedgerPeriodClosed', data: { period, carried: carriedOf(foldLedger(endedIn)) } });
const periodOpened = (period: string, allowance: number | null, resets_at: string) => ({
  type: 'AllowancePeriodOpened',
  data: { period, allowance, resets_at },
});

// ----- behaviour -----------------------------------------------------------------------------

describe('Credit ledger', () => {
  describe('When a ledger is opened', () => {
    it('records the plan with overage off and opens the current month', () => {
      spec
        .given([])
        .when({ type: 'OpenLedger', data: { account_id: 'acc-1', tier: 'hobbyist', pro: false } }, MAY)
        .then([
          { type: 'LedgerOpened', data: { account_id: 'acc-1', tier: 'hobbyist', pro: false, allow_overage: false } },
          periodOpened('2024-05', 25_000, JUNE_1),
        ]);
    });

    it('refuses to open it twice', () => {
      spec
        .given(history(opened('free'), mayOpened(1_000)))
        .when({ type: 'OpenLedger', data: { account_id: 'acc-1', tier: 'free', pro: false } }, MAY)
        .thenThrows('conflict');
    });

    it('refuses a debit on an account without a ledger', () => {
      spec.given([]).when(debit(2), MAY).thenThrows('not_found');
    });
  });

  describe('Draw order', () => {
    it('draws from the allowance while it lasts', () => {
      spec.given(history(opened('hobbyist'), mayOpened(25_000))).when(debit(2), MAY).then([charged(2)]);
    });

    it('splits a call across the rest of the allowance and prepaid credits', () => {
      spec
        .given(history(opened('hobbyist'), mayOpened(25_000), packBought(500), spent(24_990), alerted(75, 18_750, 25_000), alerted(90, 22_500, 25_000)))
        .when(debit(30), MAY)
        .then([charged(10, 20), alert(100, 25_000, 25_000)]);
    });

    it('with overage on, splits across allowance, prepaid and overage', () => {
      spec
        .given(history(opened('hobbyist'), mayOpened(25_000), overageOn, packBought(5), spent(24_990), alerted(75, 18_750, 25_000), alerted(90, 22_500, 25_000)))
        .when(debit(20), MAY)
        .then([charged(10, 5, 5), alert(100, 25_005, 25_000)]);
    });

    it('uses up the allowance exactly: remaining reaches 0, not below', () => {
      const given = history(opened('free'), mayOpened(1_000), spent(998), alerted(75, 750, 1_000), alerted(90, 900, 1_000));
      const produced = spec.given(given).when(debit(2), MAY).then([charged(2), alert(100, 1_000, 1_000)]);
      const after = foldLedger([...given, ...produced]);
      expect(usageFigures(after, MAY)).to.include({ used_this_month: 1_000, credits_remaining: 0, overage_credits: 0 });
      expect(creditsRemainingHeader(after)).to.equal('0');
    });

    describe('When the allowance and prepaid are used up and overage is off', () => {
      const exhausted = history(opened('free'), mayOpened(1_000), spent(1_000), alerted(75, 750, 1_000), alerted(90, 900, 1_000), alerted(100, 1_000, 1_000));

      it('refuses with 429 and charges nothing', () => {
        spec
          .given(exhausted)
          .when(debit(2), MAY)
          .thenThrows('credits_exhausted', (err) => {
            expect(err.status).to.equal(429);
            expect(err.extensions).to.include({ credits_remaining: 0, prepaid_credits: 0, cost: 2 });
          });
      });

      it('refuses a call that would only partly fit, without a partial charge', () => {
        spec
          .given(history(opened('free'), mayOpened(1_000), packBought(3), spent(999), alerted(75, 750, 1_000), alerted(90, 900, 1_000)))
          .when(debit(5), MAY)
          .thenThrows('credits_exhausted', (err) => expect(err.extensions).to.include({ credits_remaining: 1, prepaid_credits: 3, cost: 5 }));
      });

      it('serves again once a pack is bought (prepaid works without a subscription)', () => {
        const withPack = [...exhausted, ...decide(foldLedger(exhausted), { type: 'PurchasePack', data: { pack_id: 'p-9', credits: 500 } }, MAY)];
        spec.given(withPack).when(debit(50, 'mcp'), MAY).then([charged(0, 50, 0, '2024-05', 'mcp')]);
      });
    });

    describe('the refusal tells the caller only what its tier can do, with the numbers', () => {
      /** The 429's detail for a debit of `cost` on `given`. */
      const refusal = (given: LedgerEvent[], cost: number): string => {
        let detail = '';
        spec.given(given).when(debit(cost), MAY).thenThrows('credits_exhausted', (err) => (detail = err.detail));
        return detail;
      };
      const usedUp = (tier: Tier, allowance: number, pro = false, ...more: Step[]) => history(opened(tier, pro), mayOpened(allowance), ...more, spent(allowance));

      it('free: a pack, an upgrade or the Pro membership, never overage; "1 credit is left"', () => {
        const text = refusal(history(opened('free'), mayOpened(1_000), spent(999), alerted(75, 750, 1_000), alerted(90, 900, 1_000)), 2);
        expect(text).to.equal(
          'This call costs 2 credits and 1 credit is left (allowance and prepaid packs together). The free plan has no overage: ' +
            'buy a credit pack (from 10,000 credits for $5.00; prepaid credits carry over from month to month), ' +
            'upgrade to hobbyist (25,000 credits a month) or start the Pro membership (5,000 credits a month for $9.00 a month) ' +
            'on the account page, or wait for the allowance to reset at 2024-06-01T00:00:00.000Z.',
        );
      });

      it('free with the Pro membership: no second membership; "0 credits are left", "1 credit" for a call of one', () => {
        const text = refusal(usedUp('free', 5_000, true), 1);
        expect(text).to.match(/^This call costs 1 credit and 0 credits are left /);
        expect(text).to.contain('upgrade to hobbyist (25,000 credits a month)');
        expect(text).not.to.contain('Pro membership');
        expect(text).not.to.contain('overage on');
      });

      it('hobbyist and builder: a pack, overage at the tier price or the next plan; the membership adds nothing', () => {
        const hobbyist = refusal(usedUp('hobbyist', 25_000), 30);
        expect(hobbyist).to.contain('This call costs 30 credits and 0 credits are left');
        expect(hobbyist).to.contain('Overage is off: buy a credit pack');
        expect(hobbyist).to.contain('turn overage on (billed at $0.50 per 1,000 credits) or upgrade to builder (250,000 credits a month) on the account page');
        expect(hobbyist).not.to.contain('Pro membership');
        const builder = refusal(usedUp('builder', 250_000), 2);
        expect(builder).to.contain('turn overage on (billed at $0.40 per 1,000 credits) or upgrade to quant (2,500,000 credits a month)');
      });

      it('quant: a pack or overage; enterprise is sold by contract, not offered', () => {
        const text = refusal(usedUp('quant', 2_500_000), 500);
        expect(text).to.contain('buy a credit pack (from 10,000 credits for $5.00; prepaid credits carry over from month to month) or turn overage on (billed at $0.25 per 1,000 credits) on the account page');
        expect(text).not.to.contain('upgrade');
      });

      it('counts prepaid credits in what is left', () => {
        const text = refusal(history(opened('free'), mayOpened(1_000), packBought(3), spent(999)), 5);
        expect(text).to.contain('This call costs 5 credits and 4 credits are left');
      });

      it('offers no upgrade that would not raise this month\'s allowance (after a downgrade it waits for the next month)', () => {
        // Builder's 250,000 stay for the month of a move down to hobbyist; builder itself adds nothing now.
        const text = refusal(history(opened('builder'), mayOpened(250_000), step('PlanChanged', { tier: 'hobbyist', reason: 'set' }), spent(250_000)), 2);
        expect(text).not.to.contain('upgrade to builder');
        expect(text).to.contain('turn overage on (billed at $0.50 per 1,000 credits)');
      });
    });

    it('refuses to switch overage on for the free tier', () => {
      spec
        .given(history(opened('free'), mayOpened(1_000)))
        .when({ type: 'SwitchOverage', data: { on: true } }, MAY)
        .thenThrows('bad_request');
    });

    it('records nothing when overage is switched to the position it already has', () => {
      spec.given(history(opened('builder'), mayOpened(250_000))).when({ type: 'SwitchOverage', data: { on: false } }, MAY).then([]);
    });

    it('never refuses an enterprise call and raises no alerts (unmetered)', () => {
      const given = history(opened('enterprise'), mayOpened(null), spent(9_000_000));
      const produced = spec.given(given).when(debit(1_000_000), MAY).then([charged(1_000_000)]);
      const after = foldLedger([...given, ...produced]);
      expect(usageFigures(after, MAY)).to.include({ monthly_allowance: null, used_this_month: 10_000_000, credits_remaining: null });
      expect(creditsRemainingHeader(after)).to.equal('unlimited');
    });

    it('records nothing for a free call', () => {
      spec.given(history(opened('free'), mayOpened(1_000))).when(debit(0), JUNE).then([]);
    });

    it('refuses a malformed debit or pack', () => {
      const given = history(opened('free'), mayOpened(1_000));
      spec.given(given).when(debit(-1), MAY).thenThrows('bad_request');
      spec.given(given).when(debit(1.5), MAY).thenThrows('bad_request');
      spec.given(given).when({ type: 'PurchasePack', data: { pack_id: 'p', credits: -100 } }, MAY).thenThrows('bad_request');
      spec.given(given).when({ type: 'PurchasePack', data: { pack_id: 'p', credits: 0 } }, MAY).thenThrows('bad_request');
    });
  });

  describe('Pack purchase references (idempotency keys)', () => {
    const buy = (pack_id: string, credits: number): LedgerCommand => ({ type: 'PurchasePack', data: { pack_id, credits } });
    const bought = history(opened('free'), mayOpened(1_000), packBought(500));

    it('credits a new reference', () => {
      spec.given(bought).when(buy('pack-2', 500), MAY).then([{ type: 'PackPurchased', data: { pack_id: 'pack-2', credits: 500 } }]);
      expect(foldLedger(bought).packs).to.deep.equal({ 'pack-1': 500 });
    });

    it('records nothing for the same purchase again, not even a due month roll', () => {
      spec.given(bought).when(buy('pack-1', 500), MAY).then([]);
      spec.given(bought).when(buy('pack-1', 500), JUNE).then([]);
    });

    it('refuses another purchase under a reference already used (409 conflict)', () => {
      spec
        .given(bought)
        .when(buy('pack-1', 900), MAY)
        .thenThrows('conflict', (err) => expect(err.extensions).to.include({ pack_id: 'pack-1', credits: 500 }));
    });

    it('takes a reference named like an Object property as any other', () => {
      for (const id of ['constructor', '__proto__', 'toString']) {
        const produced = spec.given(bought).when(buy(id, 7), MAY).then([{ type: 'PackPurchased', data: { pack_id: id, credits: 7 } }]);
        const after = [...bought, ...produced];
        expect(Object.hasOwn(foldLedger(after).packs, id)).to.equal(true);
        spec.given(after).when(buy(id, 7), MAY).then([]);
        expect(foldLedger(after).prepaid).to.equal(507);
      }
    });
  });

  describe('Overage figures', () => {
    it('reports negative credits_remaining and the accrued cost in dollars', () => {
      const s = stateOf(opened('hobbyist'), mayOpened(25_000), overageOn, spent(25_000, 0, 3_000), packBought(200));
      const f = usageFigures(s, MAY);
      expect(f).to.include({
        used_this_month: 28_000,
        credits_remaining: -3_000,
        overage_credits: 3_000,
        overage_cost_usd: 1.5,
        overage_per_1k_usd: 0.5,
        prepaid_credits: 200,
        allow_overage: true,
        resets_at: JUNE_1,
      });
      expect(creditsRemainingHeader(s)).to.equal('-2800');
    });
  });

  describe('At the month boundary', () => {
    const mayHistory = history(opened('free'), mayOpened(1_000), packBought(300), spent(800), alerted(75, 750, 1_000));

    it('closes the month with the state it ended in, opens the new period with a fresh allowance, and charges it', () => {
      spec.given(mayHistory).when(debit(2), JUNE).then([closed('2024-05', mayHistory), periodOpened('2024-06', 1_000, JULY_1), charged(2, 0, 0, '2024-06')]);
    });

    it('makes the closing event alone enough to go on from: its fold is the state the month ended in', () => {
      const june = decide(foldLedger(mayHistory), debit(2), JUNE);
      const fromClosing = foldLedger(june.slice(1), foldLedger(june.slice(0, 1)));
      expect(fromClosing).to.deep.equal(foldLedger([...mayHistory, ...june]));
      expect(foldLedger(june.slice(0, 1))).to.deep.include({ prepaid: 300, used_allowance: 800, period: '2024-05', alerts: [75] });
    });

    it('shows the new month in the figures before any event, with prepaid carried over', () => {
      const f = usageFigures(foldLedger(mayHistory), JUNE);
      expect(f).to.include({ used_this_month: 0, credits_remaining: 1_000, prepaid_credits: 300, resets_at: JULY_1, period: '2024-06' });
      expect(creditsRemainingHeader(foldLedger(mayHistory), JUNE)).to.equal('1300');
      expect(creditsRemainingHeader(foldLedger(mayHistory))).to.equal('500');
    });

    it('re-arms the alerts', () => {
      const juneOpened = decide(foldLedger(mayHistory), debit(2), JUNE);
      spec
        .given([...mayHistory, ...juneOpened])
        .when(debit(748), JUNE)
        .then([charged(748, 0, 0, '2024-06'), alert(75, 750, 1_000, '2024-06')]);
    });
  });

  describe('Usage alerts', () => {
    it('raises each threshold once per month', () => {
      spec.given(history(opened('free'), mayOpened(1_000), spent(760), alerted(75, 760, 1_000))).when(debit(10), MAY).then([charged(10)]);
    });

    it('raises every threshold one debit crosses', () => {
      spec.given(history(opened('free'), mayOpened(1_000), spent(700))).when(debit(210), MAY).then([charged(210), alert(75, 910, 1_000), alert(90, 910, 1_000)]);
    });
  });

  describe('When a paid plan is cancelled', () => {
    const builder = history(opened('builder'), mayOpened(250_000), overageOn, spent(1_000));

    it('schedules the fall to free for the end of the period', () => {
      spec.given(builder).when({ type: 'CancelPlan' }, MAY).then([{ type: 'PlanCancellationScheduled', data: { effective_at: JUNE_1 } }]);
    });

    const cancelled = [...builder, ...decide(foldLedger(builder), { type: 'CancelPlan' }, MAY)];

    it('keeps the paid plan until then', () => {
      spec.given(cancelled).when(debit(2), MAY).then([charged(2)]);
      expect(usageFigures(foldLedger(cancelled), MAY)).to.include({ tier: 'builder', plan_ends_at: JUNE_1 });
    });

    it('moves to free at the boundary, switches overage off, and the key keeps working', () => {
      spec
        .given(cancelled)
        .when(debit(2), JUNE)
        .then([
          closed('2024-05', cancelled),
          { type: 'PlanChanged', data: { tier: 'free', reason: 'cancelled_at_period_end' } },
          { type: 'OverageSwitched', data: { allow_overage: false } },
          periodOpened('2024-06', 1_000, JULY_1),
          charged(2, 0, 0, '2024-06'),
        ]);
      expect(usageFigures(foldLedger(cancelled), JUNE)).to.include({ tier: 'free', monthly_allowance: 1_000, allow_overage: false, plan_ends_at: null });
    });

    it('is withdrawn by setting the same plan again', () => {
      spec.given(cancelled).when({ type: 'SetPlan', data: { tier: 'builder' } }, MAY).then([{ type: 'PlanChanged', data: { tier: 'builder', reason: 'set' } }]);
    });

    it('cannot be asked of the free tier', () => {
      spec.given(history(opened('free'), mayOpened(1_000))).when({ type: 'CancelPlan' }, MAY).thenThrows('bad_request');
    });
  });

  describe('Plan changes', () => {
    it('an upgrade lifts a hard stop at once', () => {
      const stopped = history(opened('free'), mayOpened(1_000), spent(1_000), alerted(75, 750, 1_000), alerted(90, 900, 1_000), alerted(100, 1_000, 1_000));
      const upgraded = [...stopped, ...decide(foldLedger(stopped), { type: 'SetPlan', data: { tier: 'hobbyist' } }, MAY)];
      expect(usageFigures(foldLedger(upgraded), MAY)).to.include({ monthly_allowance: 25_000, credits_remaining: 24_000 });
      spec.given(upgraded).when(debit(2), MAY).then([charged(2)]);
    });

    it('an upgrade after overage counts the overage against the raised allowance: no call beyond credits_remaining with overage off', () => {
      // 25,000 drawn and 872 more as overage on hobbyist, then overage off and builder (250,000).
      const past = history(
        opened('hobbyist'),
        mayOpened(25_000),
        overageOn,
        spent(25_000, 0, 872),
        step('OverageSwitched', { allow_overage: false }),
        step('PlanChanged', { tier: 'builder', reason: 'set' }),
      );
      expect(usageFigures(foldLedger(past), MAY)).to.include({ monthly_allowance: 250_000, used_this_month: 25_872, credits_remaining: 224_128 });
      expect(creditsRemainingHeader(foldLedger(past), MAY)).to.equal('224128');
      spec.given(past).when(debit(224_129), MAY).thenThrows('credits_exhausted');
      const all = [...past, ...decide(foldLedger(past), debit(224_128), MAY)];
      expect(all.find((e) => e.type === 'CreditsDebited' && e.data.cost === 224_128)?.data).to.include({ from_allowance: 224_128, from_overage: 0 });
      expect(usageFigures(foldLedger(all), MAY)).to.include({ credits_remaining: 0, overage_credits: 872 });
      spec.given(all).when(debit(1), MAY).thenThrows('credits_exhausted');
    });

    it('a move to free switches overage off', () => {
      spec
        .given(history(opened('quant'), mayOpened(2_500_000), overageOn))
        .when({ type: 'SetPlan', data: { tier: 'free' } }, MAY)
        .then([{ type: 'PlanChanged', data: { tier: 'free', reason: 'set' } }, { type: 'OverageSwitched', data: { allow_overage: false } }]);
    });

    it('refuses an unknown tier', () => {
      spec
        .given(history(opened('free'), mayOpened(1_000)))
        .when({ type: 'SetPlan', data: { tier: 'platinum' as Tier } }, MAY)
        .thenThrows('bad_request');
    });
  });

  // Decision: Pro raises the current period's allowance immediately (a member who hits the free
  // hard stop and joins Pro can continue at once). When Pro ends, the lower allowance applies from
  // the next period: credits already granted this month are not taken back.
  describe('Pro overlay', () => {
    const freeStopped = history(opened('free'), mayOpened(1_000), spent(1_000), alerted(75, 750, 1_000), alerted(90, 900, 1_000), alerted(100, 1_000, 1_000));

    it('raises the current allowance to 5,000 at once', () => {
      const joined = [...freeStopped, ...spec.given(freeStopped).when({ type: 'SetPro', data: { on: true } }, MAY).then([{ type: 'ProMembershipChanged', data: { pro: true } }])];
      expect(usageFigures(foldLedger(joined), MAY)).to.deep.include({
        pro_member: true,
        monthly_allowance: 5_000,
        credits_remaining: 4_000,
        entitlements: { credits: 5_000, delay_days: 0, coverage: 'all', history_days: 365 },
      });
      spec.given(joined).when(debit(2), MAY).then([charged(2)]);
    });

    it('keeps the raised allowance until the month ends when membership lapses', () => {
      const member = history(opened('free', true), mayOpened(5_000), spent(2_000));
      const lapsed = [...member, ...decide(foldLedger(member), { type: 'SetPro', data: { on: false } }, MAY)];
      expect(usageFigures(foldLedger(lapsed), MAY)).to.include({ pro_member: false, monthly_allowance: 5_000, credits_remaining: 3_000 });
      expect(usageFigures(foldLedger(lapsed), JUNE)).to.include({ monthly_allowance: 1_000, credits_remaining: 1_000 });
    });

    it('never lowers a larger tier allowance', () => {
      const s = stateOf(opened('builder', true), mayOpened(250_000));
      expect(usageFigures(s, JUNE)).to.include({ monthly_allowance: 250_000 });
    });
  });

  // Decision: the Pro membership is sold only where it adds something to the plan (proAddsTo in
  // src/domain/plans.ts): every paid plan has at least its credits, delay, coverage and history.
  describe('Pro membership sold only where it adds something', () => {
    const days = 31 - 15 + 1; // 15 May, today included
    const proRate = Math.round((900 * days) / 31);

    it('starts it on free, charged for the days left', () => {
      spec
        .given(history(opened('free'), mayOpened(1_000)))
        .when({ type: 'StartPro', data: { amount_cents: proRate, payment_ref: 'pay_1' } }, MAY)
        .then([
          { type: 'ProMembershipChanged', data: { pro: true } },
          { type: 'ProrationCharged', data: { kind: 'pro', from: 'none', to: 'pro', days, days_in_month: 31, amount_cents: proRate, payment_ref: 'pay_1', period: '2024-05' } },
        ]);
    });

    for (const tier of ['hobbyist', 'builder', 'quant', 'enterprise'] as const) {
      it(`refuses it on ${tier} (400), which has as much of everything it gives: nothing is charged`, () => {
        const err = spec
          .given(history(opened(tier), mayOpened(tier === 'enterprise' ? null : 25_000)))
          .when({ type: 'StartPro', data: { amount_cents: proRate, payment_ref: 'pay_1' } }, MAY)
          .thenThrows('bad_request');
        expect(err.detail).to.include(`adds nothing to the ${tier} plan`);
      });
    }

    it("leaves the operator's SetPro alone (a grant, not a sale)", () => {
      spec.given(history(opened('hobbyist'), mayOpened(25_000))).when({ type: 'SetPro', data: { on: true } }, MAY).then([{ type: 'ProMembershipChanged', data: { pro: true } }]);
    });
  });

  describe('A debit naming the key that made the call', () => {
    const given = history(opened('free'), mayOpened(1_000));
    const byKey = (keyId: unknown): LedgerCommand => ({ type: 'DebitCredits', data: { request_id: 'r-1', endpoint: 'screener', channel: 'rest', cost: 2, key_id: keyId as string } });

    it('records the same line as a call naming none: the key is no field of the hashed line (the service keeps it in metadata)', () => {
      const [e] = spec.given(given).when(byKey('key_abc'), MAY).then([charged(2)]);
      expect(e!.data).not.to.have.property('key_id');
      expect(e!.data.hash).to.equal(decide(foldLedger(given), debit(2), MAY)[0]!.data.hash);
    });

    it('refuses a key id that is not text (400)', () => {
      for (const bad of ['', '  ', 42]) spec.given(given).when(byKey(bad), MAY).thenThrows('bad_request');
    });
  });

  describe('Deciding and folding in one step (what the command handler uses)', () => {
    it('gives the state the decided events fold to, and the state given when nothing is recorded', () => {
      const given = history(opened('free'), mayOpened(1_000), spent(760));
      const cases: [LedgerCommand, Date][] = [
        [debit(2), MAY],
        [debit(240), MAY], // the whole allowance: alerts too
        [debit(2), JUNE], // the month rolls first
        [{ type: 'PurchasePack', data: { pack_id: 'p-2', credits: 50 } }, MAY],
        [debit(0), JUNE], // a free call: nothing, not even the roll
        [{ type: 'SwitchOverage', data: { on: false } }, MAY], // already off
      ];
      for (const [command, now] of cases) {
        const before = foldLedger(given);
        const { events, state } = decideAndFold(before, command, now);
        expect(events, command.type).to.deep.equal(decide(before, command, now));
        expect(state, command.type).to.deep.equal(foldLedger(events, before));
        if (events.length === 0) expect(state).to.equal(before);
      }
    });
  });

  describe('Hash chain', () => {
    const given = history(opened('free'), mayOpened(1_000), packBought(300), spent(800), alerted(75, 750, 1_000));
    const produced = decide(foldLedger(given), debit(900), JUNE); // May closed, June opened, charge, 75 and 90 alerts
    const stream = [...given, ...produced];

    it('continues from the last recorded hash and links each new event to the one before', () => {
      expect(produced).to.have.length(5);
      expect(produced[0]!.data.prev_hash).to.equal(given.at(-1)!.data.hash);
      for (let i = 1; i < produced.length; i++) expect(produced[i]!.data.prev_hash).to.equal(produced[i - 1]!.data.hash);
      for (const e of produced) expect(e.data.hash).to.equal(computeHash(e.type, e.data));
      expect(produced.every((e) => e.data.at === JUNE.toISOString())).to.equal(true);
    });

    it('starts from 64 zeros', () => {
      expect(stream[0]!.data.prev_hash).to.equal('0'.repeat(64));
    });

    it('verifies an intact stream', () => {
      expect(verifyChain(stream)).to.equal(null);
    });

    it('detects an event whose type was relabelled', () => {
      const relabelled = stream.map((e, i) => (i === 3 ? { ...e, type: 'PackPurchased' } : e));
      expect(verifyChain(relabelled)).to.include({ index: 3, reason: 'hash_mismatch' });
    });

    it('detects an altered event', () => {
      const altered = stream.map((e, i) => (i === 3 ? { ...e, data: { ...e.data, from_allowance: 1 } } : e));
      expect(verifyChain(altered)).to.include({ index: 3, reason: 'hash_mismatch' });
    });

    it('detects an altered event whose own hash was recomputed, at the next link', () => {
      const forged = stream.map((e, i) => {
        if (i !== 3) return e;
        const data = { ...e.data, from_allowance: 1 };
        return { ...e, data: { ...data, hash: computeHash(e.type, data) } };
      });
      expect(verifyChain(forged)).to.include({ index: 4, reason: 'prev_hash_mismatch' });
    });

    it('detects a removed event', () => {
      const removed = stream.filter((_, i) => i !== 2);
      expect(verifyChain(removed)).to.include({ index: 2, reason: 'prev_hash_mismatch' });
    });

    it('detects an event without chain fields', () => {
      expect(verifyChain([{ type: 'LedgerOpened', data: { account_id: 'x' } }])).to.include({ index: 0, reason: 'not_chained' });
    });
  });
});
