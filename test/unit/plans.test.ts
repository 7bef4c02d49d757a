import { expect } from 'chai';
import { PLANS, PRO_OVERLAY, TIERS, entitlementsOf, isTier, overageAllowed, tierAtLeast } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS, costOf, describeCost, rateCardForUsage, rateKeyOf, type RateKey } from '../../src/domain/rate-card.js';

describe('Plan tiers', () => {
  it('are ranked free < hobbyist < builder < quant < enterprise', () => {
    expect(TIERS).to.deep.equal(['free', 'hobbyist', 'builder', 'quant', 'enterprise']);
    expect(tierAtLeast('quant', 'builder')).to.equal(true);
    expect(tierAtLeast('builder', 'builder')).to.equal(true);
    expect(tierAtLeast('hobbyist', 'builder')).to.equal(false);
    expect(tierAtLeast('enterprise', 'quant')).to.equal(true);
  });

  it('carry the tier table of docs/product.md', () => {
    expect(PLANS.free).to.include({ monthly_allowance: 1_000, delay_days: 7, coverage: 'top100', history_days: 90, overage_per_1k_usd: null });
    expect(PLANS.hobbyist).to.include({ monthly_allowance: 25_000, delay_days: 0, coverage: 'all', history_days: 730, overage_per_1k_usd: 0.5 });
    expect(PLANS.builder).to.include({ monthly_allowance: 250_000, history_days: 1_825, overage_per_1k_usd: 0.4 });
    expect(PLANS.quant).to.include({ monthly_allowance: 2_500_000, history_days: null, overage_per_1k_usd: 0.25 });
    expect(PLANS.enterprise).to.include({ monthly_allowance: null, history_days: null, overage_per_1k_usd: null });
  });

  it('let only metered paid tiers switch overage on', () => {
    expect(TIERS.filter(overageAllowed)).to.deep.equal(['hobbyist', 'builder', 'quant']);
  });

  it('recognise tier names', () => {
    expect(isTier('quant')).to.equal(true);
    expect(isTier('platinum')).to.equal(false);
    expect(isTier(undefined)).to.equal(false);
  });
});

describe('The Pro overlay', () => {
  it('is live data, full universe, one year of history and 5,000 credits', () => {
    expect(PRO_OVERLAY).to.deep.equal({ credits: 5_000, delay_days: 0, coverage: 'all', history_days: 365 });
  });

  it('lifts a free key to the overlay on every entitlement', () => {
    expect(entitlementsOf('free', true)).to.deep.equal({ credits: 5_000, delay_days: 0, coverage: 'all', history_days: 365 });
    expect(entitlementsOf('free', false)).to.deep.equal({ credits: 1_000, delay_days: 7, coverage: 'top100', history_days: 90 });
  });

  it('keeps whatever the tier already does better', () => {
    expect(entitlementsOf('hobbyist', true)).to.deep.equal({ credits: 25_000, delay_days: 0, coverage: 'all', history_days: 730 });
    expect(entitlementsOf('quant', true)).to.deep.equal({ credits: 2_500_000, delay_days: 0, coverage: 'all', history_days: null });
  });

  it('treats null (unmetered, full history) as better than any number', () => {
    expect(entitlementsOf('enterprise', true)).to.deep.equal({ credits: null, delay_days: 0, coverage: 'all', history_days: null });
  });
});

describe('The rate card', () => {
  // The product's rate card, read row by row (screener per row, as docs/product.md settles).
  const SPEC: Record<RateKey, [method: string, path: string, credits: number, unit: string, minTier: string]> = {
    scores: ['GET', '/v1/scores/{ticker}', 2, 'call', 'free'],
    history: ['GET', '/v1/scores/{ticker}/history', 1, 'row', 'free'],
    social_heat: ['GET', '/v1/scores/social-heat/{ticker}', 1, 'row', 'free'],
    multi_history: ['GET', '/v1/scores/history', 1, 'row', 'free'],
    screener: ['GET', '/v1/screener', 2, 'row', 'free'],
    divergence: ['GET', '/v1/divergence', 3, 'row', 'free'],
    signals: ['GET', '/v1/signals', 2, 'call', 'free'],
    themes: ['GET', '/v1/themes', 2, 'call', 'free'],
    theme_detail: ['GET', '/v1/themes/{slug}', 1, 'constituent', 'free'],
    coverage: ['GET', '/v1/coverage', 0, 'call', 'free'],
    earnings: ['GET', '/v1/earnings', 100, 'call', 'builder'],
    divergence_events: ['GET', '/v1/divergence/events', 10, 'call', 'quant'],
    track_record: ['GET', '/v1/track-record', 0, 'call', 'free'],
    divergence_open: ['GET', '/v1/divergence/open', 500, 'call', 'quant'],
    usage: ['GET', '/v1/usage', 0, 'call', 'free'],
    usage_ledger: ['GET', '/v1/usage/ledger', 0, 'call', 'free'],
    requests: ['GET', '/v1/requests', 0, 'call', 'free'],
    meta: ['GET', '/v1/meta', 0, 'call', 'free'],
    bulk_exports: ['GET', '/v1/bulk/exports', 0, 'call', 'quant'],
    keys: ['GET', '/v1/keys', 0, 'call', 'free'],
    webhooks: ['POST', '/v1/webhooks', 0, 'call', 'quant'],
  };

  for (const key of Object.keys(SPEC) as RateKey[]) {
    it(`prices ${key} as the spec does`, () => {
      const [method, path, credits, unit, minTier] = SPEC[key];
      const entry = RATE_CARD[key];
      expect(entry.routes[0]).to.deep.equal({ method, path });
      expect(entry).to.include({ key, credits, unit, min_tier: minTier });
    });
  }

  it('has no endpoint the spec does not price', () => {
    expect([...RATE_KEYS].sort()).to.deep.equal(Object.keys(SPEC).sort());
  });

  it('keeps every webhook endpoint free and quant+', () => {
    expect(RATE_CARD.webhooks.routes).to.have.length(9);
    for (const r of RATE_CARD.webhooks.routes) expect(rateKeyOf(r.method, r.path)).to.equal('webhooks');
  });

  it('charges a fixed price per call, and per row or constituent returned', () => {
    expect(costOf('scores')).to.equal(2);
    expect(costOf('earnings', 37)).to.equal(100);
    expect(costOf('screener', 100)).to.equal(200);
    expect(costOf('divergence', 25)).to.equal(75);
    expect(costOf('history', 250)).to.equal(250);
    expect(costOf('theme_detail', 12)).to.equal(12);
    expect(costOf('coverage')).to.equal(0);
  });

  it('charges nothing for zero rows', () => {
    expect(costOf('screener', 0)).to.equal(0);
    expect(costOf('multi_history', 0)).to.equal(0);
  });

  it('refuses a nonsensical quantity', () => {
    expect(() => costOf('history', -1)).to.throw();
    expect(() => costOf('history', 1.5)).to.throw();
  });

  it('is shown in /v1/usage with credits, unit and endpoint', () => {
    const card = rateCardForUsage();
    expect(card.scores).to.deep.equal({ credits: 2, unit: 'call', endpoint: 'GET /v1/scores/{ticker}' });
    expect(card.history).to.deep.equal({ credits: 1, unit: 'row', endpoint: 'GET /v1/scores/{ticker}/history' });
    expect(card.screener).to.deep.equal({ credits: 2, unit: 'row', endpoint: 'GET /v1/screener' });
    expect(card.divergence).to.deep.equal({ credits: 3, unit: 'row', endpoint: 'GET /v1/divergence' });
    expect(Object.keys(card)).to.have.length(RATE_KEYS.length);
  });

  it('describes costs for docs', () => {
    expect(describeCost('divergence')).to.equal('3 credits per row returned');
    expect(describeCost('theme_detail')).to.equal('1 credit per constituent returned');
    expect(describeCost('earnings')).to.equal('100 credits per call');
    expect(describeCost('meta')).to.equal('free');
  });

  it('finds the rate of a route', () => {
    expect(rateKeyOf('get', '/v1/divergence/open')).to.equal('divergence_open');
    expect(rateKeyOf('GET', '/v1/nope')).to.equal(undefined);
  });
});
