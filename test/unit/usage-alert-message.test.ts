import { expect } from 'chai';
import { sealEvent, GENESIS_HASH, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { alertAccounts, mailOutbox, resetsAtOf, usageAlertMessage, usageAlertsProjection, type AlertPlan, type MailOutboxDoc, type UsageAlertFacts } from '../../projections/usage-alerts/usage-alerts.projection.js';
import { accounts } from '../../projections/shared/accounts.js';
import { ProjectionHarness } from '../support/projection-harness.js';

const plan = (p: Partial<AlertPlan> = {}): AlertPlan => ({ tier: 'hobbyist', pro: false, allow_overage: false, prepaid: 0, ...p });
const facts = (f: Partial<UsageAlertFacts> = {}): UsageAlertFacts => ({
  account_id: 'acc_1',
  period: '2024-04',
  threshold: 90,
  used: 22_500,
  allowance: 25_000,
  plan: plan(),
  ...f,
});

describe('A usage-alert email', () => {
  describe('When a hobbyist account with overage off reaches 90%', () => {
    const { subject, text } = usageAlertMessage(facts());

    it('says the threshold and the allowance in the subject', () => {
      expect(subject).to.equal('You have used 90% of your 25,000 monthly credits');
    });

    it('gives used, allowance, what is left and the reset instant', () => {
      expect(text).to.contain('account acc_1 has used 90% of its monthly credit allowance for April 2024');
      expect(text).to.match(/Used this month: +22,500 credits/);
      expect(text).to.match(/Monthly allowance: +25,000 credits \(hobbyist plan\)/);
      expect(text).to.match(/Left this month: +2,500 credits/);
      expect(text).to.match(/Prepaid credits: +0\n/);
      expect(text).to.match(/Allowance resets: +1 May 2024, 00:00 UTC \(2024-05-01T00:00:00.000Z\)/);
    });

    it('warns of the 429 stop at 100% and offers a pack, overage at the tier price, or the next tier', () => {
      expect(text).to.contain('Once the allowance is used up, calls are refused with HTTP 429 credits_exhausted');
      expect(text).to.contain('Overage is off for this account.');
      expect(text).to.contain('buy a credit pack');
      expect(text).to.contain('turn overage on (billed at $0.50 per 1,000 credits)');
      expect(text).to.contain('upgrade to builder (250,000 credits a month)');
    });

    it('points at /v1/usage and explains how often it is sent', () => {
      expect(text).to.contain('GET /v1/usage');
      expect(text).to.contain('X-Credits-Remaining');
      expect(text).to.contain('75%, 90% and 100%');
    });
  });

  describe('When a free account with prepaid credits reaches 100%', () => {
    const { subject, text } = usageAlertMessage(
      facts({ threshold: 100, used: 1_000, allowance: 1_000, plan: plan({ tier: 'free', prepaid: 2_000 }) }),
    );

    it('says the allowance is used up and that prepaid credits are drawn next, then a hard stop', () => {
      expect(subject).to.equal('You have used 100% of your 1,000 monthly credits');
      expect(text).to.contain('Your allowance is used up, so from now on calls draw on your 2,000 prepaid credits; once those are gone');
      expect(text).to.contain('refused with HTTP 429 credits_exhausted');
      expect(text).to.contain('The free tier has no overage: this is a hard stop.');
      expect(text).to.match(/Prepaid credits: +2,000/);
    });

    it('never offers overage, which free cannot turn on, and offers the Pro membership, which adds credits on free', () => {
      expect(text).not.to.contain('turn overage on');
      expect(text).to.contain('upgrade to hobbyist (25,000 credits a month) or start the Pro membership (5,000 credits a month for $9.00 a month).');
    });
  });

  describe('When an account with overage on goes past its allowance', () => {
    const { text } = usageAlertMessage(
      facts({ threshold: 100, used: 2_501_200, allowance: 2_500_000, plan: plan({ tier: 'quant', allow_overage: true }) }),
    );

    it('says calls keep working at the overage price and shows the credits over', () => {
      expect(text).to.contain('calls keep working and are billed as overage at $0.25 per 1,000 credits');
      expect(text).to.match(/Left this month: +none: 1,200 credits over, billed as overage/);
      expect(text).to.contain('turn overage off');
    });
  });

  describe('When a quant account with overage off reaches 90%', () => {
    const { text } = usageAlertMessage(facts({ used: 2_250_000, allowance: 2_500_000, plan: plan({ tier: 'quant' }) }));

    it('offers a pack or overage, and no upgrade: enterprise is sold by contract', () => {
      expect(text).to.contain('To keep calling without interruption, buy a credit pack (from 10,000 credits for $5.00; prepaid credits carry over from month to month) or turn overage on (billed at $0.25 per 1,000 credits).');
      expect(text).not.to.contain('upgrade');
    });
  });

  describe('When a free account has the Pro membership', () => {
    const { subject, text } = usageAlertMessage(facts({ threshold: 75, used: 3_750, allowance: 5_000, plan: plan({ tier: 'free', pro: true }) }));

    it('names the Pro allowance and the plan', () => {
      expect(subject).to.equal('You have used 75% of your 5,000 monthly credits');
      expect(text).to.contain('5,000 credits (free plan with Pro membership)');
    });

    it('offers the next plan, not the membership it already has', () => {
      expect(text).to.contain('upgrade to hobbyist (25,000 credits a month).');
      expect(text).not.to.contain('start the Pro membership');
    });
  });

  describe('When one call jumps past two thresholds', () => {
    it('reports the real share used in subject and body, and the threshold it crossed', () => {
      const { subject, text } = usageAlertMessage(facts({ threshold: 75, used: 23_750 }));
      expect(subject).to.equal('You have used 95% of your 25,000 monthly credits');
      expect(text).to.contain('has used 95% of its monthly credit allowance for April 2024, past the 75% alert threshold.');
    });
  });

  describe('When the plan is not known', () => {
    it('explains every outcome briefly instead of guessing', () => {
      const { text } = usageAlertMessage(facts({ plan: null }));
      expect(text).to.contain('billed as overage if you have turned overage on; otherwise calls are refused with HTTP 429');
      expect(text).not.to.contain('Prepaid credits:');
      expect(text).to.match(/Monthly allowance: +25,000 credits\n/);
    });
  });

  describe('When the alert is about December', () => {
    it('resets on the 1st of January of the next year', () => {
      expect(resetsAtOf('2024-12').toISOString()).to.equal('2025-01-01T00:00:00.000Z');
      expect(usageAlertMessage(facts({ period: '2024-12' })).text).to.contain('1 January 2025, 00:00 UTC (2025-01-01T00:00:00.000Z)');
    });
  });
});

describe('The usage-alerts projection', () => {
  const AT = '2024-04-10T09:00:00.000Z';

  /** A ledger's events chained like the decider chains them. */
  function ledger(...bodies: [LedgerEvent['type'], Record<string, unknown>][]): { type: string; data: unknown }[] {
    let prev = GENESIS_HASH;
    return bodies.map(([type, body]) => {
      const e = sealEvent(type, body as never, AT, prev);
      prev = e.data.hash;
      return e;
    });
  }

  function setup(email: string | null) {
    const h = new ProjectionHarness(usageAlertsProjection);
    h.ctx.upsert(accounts, { account_id: 'a1', email, created_at: AT });
    const events = ledger(
      ['LedgerOpened', { account_id: 'a1', tier: 'hobbyist', pro: false, allow_overage: false }],
      ['AllowancePeriodOpened', { period: '2024-04', allowance: 25_000, resets_at: '2024-05-01T00:00:00.000Z' }],
      ['PackPurchased', { pack_id: 'p1', credits: 5_000 }],
      ['OverageSwitched', { allow_overage: true }],
      ['CreditsDebited', { request_id: 'r1', endpoint: 'scores', channel: 'rest', cost: 26_000, from_allowance: 25_000, from_prepaid: 1_000, from_overage: 0, period: '2024-04' }],
      ['UsageAlertRaised', { period: '2024-04', threshold: 100, used: 25_000, allowance: 25_000 }],
    ).map((e) => h.event('ledger-a1', e.type, e.data));
    return { h, events, alert: events[events.length - 1]! };
  }

  it('writes the finished message as pending, with the plan facts of that moment', async () => {
    const { h, events, alert } = setup('dev@example.com');
    await h.apply(...events);
    const doc = h.snapshot()[mailOutbox.name]![alert.id] as MailOutboxDoc;
    expect(doc).to.include({ id: alert.id, account_id: 'a1', to: 'dev@example.com', status: 'pending', period: '2024-04', threshold: 100, created_at: AT, sent_at: null });
    expect(doc.text).to.contain('calls draw on your 4,000 prepaid credits');
    expect(doc.text).to.contain('billed as overage at $0.50 per 1,000 credits');
    expect(h.snapshot()[alertAccounts.name]!['a1']).to.deep.equal({ account_id: 'a1', tier: 'hobbyist', pro: false, allow_overage: true, prepaid: 4_000 });
  });

  it('marks it sent on UsageAlertEmailed, and a re-delivered alert does not make it pending again', async () => {
    const { h, events, alert } = setup('dev@example.com');
    await h.apply(...events);
    await h.apply(h.event('mail-a1', 'UsageAlertEmailed', { alert_event_id: alert.id, to: 'dev@example.com', at: '2024-04-10T09:00:05.000Z' }));
    await h.apply(alert);
    expect(h.snapshot()[mailOutbox.name]![alert.id]).to.include({ status: 'sent', sent_at: '2024-04-10T09:00:05.000Z' });
  });

  it('ignores a UsageAlertEmailed on another account\'s mail stream', async () => {
    const { h, events, alert } = setup('dev@example.com');
    await h.apply(...events);
    await h.apply(h.event('mail-a2', 'UsageAlertEmailed', { alert_event_id: alert.id, to: 'x@example.com', at: AT }));
    expect(h.snapshot()[mailOutbox.name]![alert.id]).to.include({ status: 'pending' });
  });

  it('records an account without an email address as no_address', async () => {
    const { h, events, alert } = setup(null);
    await h.apply(...events);
    expect(h.snapshot()[mailOutbox.name]![alert.id]).to.include({ status: 'no_address', to: null });
  });

  it('never rejects a malformed alert: it ignores it', async () => {
    const h = new ProjectionHarness(usageAlertsProjection);
    await h.apply(h.event('ledger-a1', 'UsageAlertRaised', { period: 'April', threshold: 80, used: -1, allowance: 0 }));
    expect(h.snapshot()[mailOutbox.name] ?? {}).to.deep.equal({});
  });
});
