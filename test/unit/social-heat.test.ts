import { expect } from 'chai';
import { round2 } from '../../src/domain/composite.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { socialHeat, TRAILING_DAYS, type DailyValue } from '../../queries/get-social-heat/get-social-heat.query.js';

const s = (...points: [string, number][]): DailyValue[] => points.map(([date, value]) => ({ date, value }));

describe('Social heat (pure computation)', () => {
  // 2019 is not a leap year, so 2019-01-01 + 365 days = 2020-01-01.
  const series = s(
    ['2019-01-01', 200], // no earlier visits: 200 / max(200, —) = 100
    ['2019-01-02', 50], // 50 / max(50, 200) = 25
    ['2020-01-01', 100], // window 2019-01-01 … 2019-12-31 holds the 200 (exactly 365 days before): 100 / 200 = 50
    ['2020-01-02', 80], // window 2019-01-02 … 2020-01-01: the 200 is 366 days back and out; max(50, 100) = 100 → 80 / 100 = 80
    ['2020-01-03', 120], // window max 100 < 120: 120 / 120 = 100
  );

  it('divides the day by the maximum of itself and the 365 calendar days before it', () => {
    expect(socialHeat(series, null, '2020-12-31')).to.deep.equal(
      s(['2019-01-01', 100], ['2019-01-02', 25], ['2020-01-01', 50], ['2020-01-02', 80], ['2020-01-03', 100]),
    );
  });

  describe('When a visit lies at the edge of the window', () => {
    it('counts the visit exactly 365 days before and ignores the one 366 days before', () => {
      expect(addDays('2019-01-01', TRAILING_DAYS)).to.equal('2020-01-01');
      const [onEdge, pastEdge] = socialHeat(series, '2020-01-01', '2020-01-02');
      expect(onEdge).to.deep.equal({ date: '2020-01-01', value: 50 }); // 100 / 200 (the 200 counts)
      expect(pastEdge).to.deep.equal({ date: '2020-01-02', value: 80 }); // 80 / 100, not 80 / 200 = 40
    });

    it('counts calendar days across a leap day: 2019-03-02 is 365 days before 2020-03-01, 2019-03-01 is 366', () => {
      // 2020-03-01: only 2019-03-02 (60) is in the window → 30 / 60 = 50; the 90 of 2019-03-01 is out.
      expect(socialHeat(s(['2019-03-01', 90], ['2019-03-02', 60], ['2020-03-01', 30]), '2020-03-01', '2020-03-01')).to.deep.equal(
        s(['2020-03-01', 50]),
      );
    });
  });

  it('returns only the rows between start and end, the earlier days still feeding the window', () => {
    expect(socialHeat(series, '2019-06-01', '2020-01-01')).to.deep.equal(s(['2020-01-01', 50]));
    expect(socialHeat(series, '2020-01-04', '2020-02-01')).to.deep.equal([]);
    expect(socialHeat([], null, '2020-01-01')).to.deep.equal([]);
  });

  it('does not let a later day raise an earlier day (the window never looks forward)', () => {
    // 2019-05-01: 10 / 10 = 100; 2019-05-02: 1000 / 1000 = 100 (only the 10 before it).
    expect(socialHeat(s(['2019-05-01', 10], ['2019-05-02', 1000]), null, '2019-05-02')).to.deep.equal(
      s(['2019-05-01', 100], ['2019-05-02', 100]),
    );
  });

  it('rounds to 2 decimals', () => {
    // 1 / 3 × 100 = 33.333… → 33.33; 2 / 3 × 100 = 66.666… → 66.67.
    expect(socialHeat(s(['2019-05-01', 3], ['2019-05-02', 1], ['2019-05-03', 2]), null, '2019-05-03')).to.deep.equal(
      s(['2019-05-01', 100], ['2019-05-02', 33.33], ['2019-05-03', 66.67]),
    );
  });

  describe('When there are no visits', () => {
    it('scores 0 when the day and its trailing maximum are both 0, 100 for the first visits, 0 for a quiet day after them', () => {
      // 0 / max(0, —) → 0; 0 / max(0, 0) → 0; 30 / max(30, 0) = 100; 0 / max(0, 30) = 0.
      expect(socialHeat(s(['2019-03-01', 0], ['2019-03-02', 0], ['2019-03-03', 30], ['2019-03-04', 0]), null, '2019-03-04')).to.deep.equal(
        s(['2019-03-01', 0], ['2019-03-02', 0], ['2019-03-03', 100], ['2019-03-04', 0]),
      );
    });
  });

  it('agrees with the direct definition on a long irregular series (the sliding maximum is exact)', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const long: DailyValue[] = [];
    for (let date = '2016-01-01'; date <= '2020-12-31'; date = addDays(date, 1 + Math.floor(next() * 4))) {
      long.push({ date, value: Math.floor(next() * 1000) });
    }
    const direct = long
      .filter((p) => p.date >= '2017-06-01' && p.date <= '2020-06-30')
      .map((p) => {
        const from = addDays(p.date, -365);
        const trailing = Math.max(0, ...long.filter((q) => q.date >= from && q.date < p.date).map((q) => q.value));
        const denominator = Math.max(p.value, trailing);
        return { date: p.date, value: denominator > 0 ? round2((p.value / denominator) * 100) : 0 };
      });
    expect(direct.length).to.be.greaterThan(400);
    expect(socialHeat(long, '2017-06-01', '2020-06-30')).to.deep.equal(direct);
  });
});
