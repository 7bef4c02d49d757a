import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import { admit, type Principal, type RateDecision } from '../../src/web/meter.port.js';
import { creditOptions, credits, creditsLeft, joinOr } from '../../src/domain/credit-options.js';
import { entitlementsOf, type Tier } from '../../src/domain/plans.js';
import { requireTier } from '../../src/domain/rate-card.js';

/** The refusal `fn` throws. */
function refusal(fn: () => void): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a refusal');
}

describe('Refusal messages', () => {
  describe('credit counts', () => {
    it('agree in number: 1 credit is, 0 and 2 credits are', () => {
      expect([0, 1, 2, 25_000].map(credits)).to.deep.equal(['0 credits', '1 credit', '2 credits', '25,000 credits']);
      expect([0, 1, 2].map(creditsLeft)).to.deep.equal(['0 credits are left', '1 credit is left', '2 credits are left']);
      expect([joinOr(['a']), joinOr(['a', 'b']), joinOr(['a', 'b', 'c'])]).to.deep.equal(['a', 'a or b', 'a, b or c']);
    });
  });

  describe('the ways to more credits, per tier', () => {
    const offered = (tier: Tier, pro = false, allow_overage = false) =>
      creditOptions({ tier, pro, allow_overage, allowance: entitlementsOf(tier, pro).credits }).map((o) => o.replace(/ \(.*$/, ''));

    it('never offer free overage, and offer it the Pro membership until it has it', () => {
      expect(offered('free')).to.deep.equal(['buy a credit pack', 'upgrade to hobbyist', 'start the Pro membership']);
      expect(offered('free', true)).to.deep.equal(['buy a credit pack', 'upgrade to hobbyist']);
    });

    it('offer the metered paid tiers overage while it is off, and the next self-serve plan', () => {
      expect(offered('hobbyist')).to.deep.equal(['buy a credit pack', 'turn overage on', 'upgrade to builder']);
      expect(offered('builder', true)).to.deep.equal(['buy a credit pack', 'turn overage on', 'upgrade to quant']);
      expect(offered('builder', false, true)).to.deep.equal(['buy a credit pack', 'upgrade to quant']);
      expect(offered('quant')).to.deep.equal(['buy a credit pack', 'turn overage on']);
    });

    it('offer enterprise (unmetered, by contract) nothing but packs', () => {
      expect(offered('enterprise')).to.deep.equal(['buy a credit pack']);
    });
  });

  describe('403 tier', () => {
    it('names the plan needed and the self-serve upgrade to it', () => {
      const e = refusal(() => requireTier('free', 'earnings'));
      expect(e.code).to.equal('tier');
      expect(e.detail).to.equal('GET /v1/earnings needs the builder plan or higher; this key is on the free plan: upgrade to builder or higher on the account page');
      expect(refusal(() => requireTier('builder', 'divergence_events')).detail).to.match(/needs the quant plan or higher; this key is on the builder plan: upgrade to quant or higher on the account page$/);
    });
  });

  describe('429 rate_limited', () => {
    const principal = (perSecond: number, capacity: number): Principal => {
      const rate: RateDecision = { allowed: false, perSecond, capacity, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 };
      return { account_id: 'a', key_id: 'k', tier: 'free', pro: false, entitlements: entitlementsOf('free', false), request_id: 'r', rate, limits: null };
    };

    it('says "1 request per second" and "10 requests per second"', () => {
      expect(refusal(() => admit(principal(1, 2))).detail).to.equal('This account\'s keys may send 1 request per second together (bursts of 2); retry in 1 s');
      expect(refusal(() => admit(principal(10, 20))).detail).to.equal('This account\'s keys may send 10 requests per second together (bursts of 20); retry in 1 s');
    });
  });
});
