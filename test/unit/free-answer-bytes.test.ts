import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import { FREE_ANSWER_BURST_SECONDS, FreeAnswerBytes, type FreeAnswerCaller } from '../../src/app/metering/free-answer-bytes.js';
import type { Tier } from '../../src/domain/plans.js';

/** The budget of free answers' bytes (issue 42 item 5), on a clock moved by hand. */
describe("An account's budget of free answers' bytes", () => {
  let t = 0;
  const now = () => t;
  const caller = (tier: Tier, account = `acct_${tier}`, perSecond: number | null = 10): FreeAnswerCaller => ({ account_id: account, tier, rate: { perSecond } });
  const refusal = (budget: FreeAnswerBytes, who: FreeAnswerCaller): AppError | null => {
    try {
      budget.check(who);
      return null;
    } catch (err) {
      return err as AppError;
    }
  };
  beforeEach(() => {
    t = 0;
  });

  it('sends an answer larger than what is left whole, then refuses until the debt is refilled, saying when to retry', () => {
    const budget = new FreeAnswerBytes(1000, now);
    const free = caller('free');
    const burst = 1000 * FREE_ANSWER_BURST_SECONDS;
    expect(refusal(budget, free)).to.equal(null);
    budget.take(free, burst + 2500); // one body 2,500 bytes over the whole burst: still sent
    const refused = refusal(budget, free)!;
    expect(refused).to.be.instanceOf(AppError);
    expect(refused).to.include({ code: 'rate_limited', status: 429 });
    expect(refused.extensions).to.deep.equal({ retry_after_seconds: 3, bytes_per_second: 1000 });
    expect(refused.detail).to.match(/may move 1000 bytes per second \(bursts of 8000\).*retry in 3 s.*If-None-Match/);
    t = 2400;
    expect(refusal(budget, free)?.extensions['retry_after_seconds']).to.equal(1);
    t = 2600;
    expect(refusal(budget, free)).to.equal(null);
  });

  it('keeps one bucket per account, refilled at most to the burst', () => {
    const budget = new FreeAnswerBytes(1000, now);
    budget.take(caller('free', 'acct_a'), 20_000);
    expect(refusal(budget, caller('free', 'acct_a'))).to.not.equal(null);
    expect(refusal(budget, caller('free', 'acct_b'))).to.equal(null);
    t = 60_000; // a minute idle refills 60,000 bytes, but the bucket holds 8,000
    budget.take(caller('free', 'acct_a'), 8_000);
    expect(refusal(budget, caller('free', 'acct_a'))).to.not.equal(null);
  });

  it("gives a paid tier the free budget times its request rate over free's, and none to an unlimited account or with the setting off", () => {
    const budget = new FreeAnswerBytes(1000, now);
    expect((['free', 'hobbyist', 'builder', 'quant', 'enterprise'] as const).map((tier) => budget.perSecondOf(caller(tier)))).to.deep.equal([1000, 2000, 5000, 10_000, 50_000]);
    expect(budget.perSecondOf(caller('quant', 'acct_x', null))).to.equal(null);
    budget.take(caller('quant', 'acct_x', null), 1e12);
    expect(refusal(budget, caller('quant', 'acct_x', null))).to.equal(null);
    const off = new FreeAnswerBytes(null, now);
    off.take(caller('free'), 1e12);
    expect(refusal(off, caller('free'))).to.equal(null);
  });
});
