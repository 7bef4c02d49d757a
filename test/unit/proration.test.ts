import { expect } from 'chai';
import { PRO_MONTHLY_PRICE_CENTS, daysInMonth, monthlyPriceCents, prorate } from '../../src/domain/ledger/proration.js';
import { PLANS, PRO_MONTHLY_PRICE_USD, TIERS } from '../../src/domain/plans.js';

// ----- the expected figures, computed here without the module under test ---------------------

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
/** Days of a month (1-12) by the calendar rule, not by Date arithmetic. */
const calendarDays = (year: number, month: number) => [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;

/** Round half up to the cent, in integers: floor((2·n + d) / (2·d)) = round(n / d) for n, d ≥ 0. */
const roundedDiv = (n: number, d: number) => Math.floor((2 * n + d) / (2 * d));

/** Days left including today / days in the month × the monthly difference, rounded to the cent. */
function expected(differenceCents: number, iso: string) {
  // The UTC calendar date, read off the ISO text after normalising it to UTC.
  const utc = new Date(iso).toISOString();
  const year = Number(utc.slice(0, 4));
  const month = Number(utc.slice(5, 7));
  const day = Number(utc.slice(8, 10));
  const total = calendarDays(year, month);
  const left = total - day + 1;
  return { days: left, days_in_month: total, monthly_difference_cents: differenceCents, amount_cents: roundedDiv(differenceCents * left, total) };
}

describe('proration to the day', () => {
  describe('prorate()', () => {
    const cases: Array<{ at: string; days: number; of: number; why: string }> = [
      { at: '2024-04-01T00:00:00Z', days: 30, of: 30, why: '1st of a 30-day month: the whole month' },
      { at: '2024-04-10T12:00:00Z', days: 21, of: 30, why: '10th of a 30-day month' },
      { at: '2024-04-15T08:30:00Z', days: 16, of: 30, why: '15th of a 30-day month' },
      { at: '2024-04-30T23:59:59Z', days: 1, of: 30, why: 'last day of a 30-day month, its last second: today counts' },
      { at: '2024-05-01T00:00:00Z', days: 31, of: 31, why: '1st of a 31-day month' },
      { at: '2024-05-15T12:00:00Z', days: 17, of: 31, why: '15th of a 31-day month' },
      { at: '2024-05-31T18:00:00Z', days: 1, of: 31, why: 'last day of a 31-day month' },
      { at: '2024-02-01T00:00:00Z', days: 29, of: 29, why: '1st of February in a leap year' },
      { at: '2024-02-15T00:00:00Z', days: 15, of: 29, why: '15th of February in a leap year' },
      { at: '2024-02-29T12:00:00Z', days: 1, of: 29, why: 'the leap day' },
      { at: '2023-02-15T00:00:00Z', days: 14, of: 28, why: '15th of February in a common year' },
      { at: '2100-02-01T00:00:00Z', days: 28, of: 28, why: 'February 2100 (not a leap year)' },
      { at: '2000-02-01T00:00:00Z', days: 29, of: 29, why: 'February 2000 (a leap year)' },
      { at: '2024-12-31T23:00:00Z', days: 1, of: 31, why: 'the last day of the year' },
      { at: '2024-03-31T23:30:00-05:00', days: 30, of: 30, why: 'an instant given with an offset counts in UTC (1 April 04:30Z)' },
    ];
    const differences = [1_900, 8_000, 48_000, 9_900, 900, 1, 7, 33, 0];

    for (const c of cases) {
      it(`${c.why} (${c.at}): ${c.days} of ${c.of} days`, () => {
        // The hand-written table and the independent calendar agree first.
        expect(expected(0, c.at)).to.include({ days: c.days, days_in_month: c.of });
        for (const diff of differences) {
          expect(prorate(diff, new Date(c.at)), `difference ${diff}`).to.deep.equal(expected(diff, c.at));
        }
      });
    }

    it('gives the amounts worked out by hand', () => {
      // free → hobbyist on 10 April: 1,900 × 21 / 30 = 1,330.
      expect(prorate(1_900, new Date('2024-04-10T12:00:00Z')).amount_cents).to.equal(1_330);
      // hobbyist → builder on 16 May: 8,000 × 16 / 31 = 4,129.03… → 4,129.
      expect(prorate(8_000, new Date('2024-05-16T00:00:00Z')).amount_cents).to.equal(4_129);
      // Pro on 20 February 2024: 900 × 10 / 29 = 310.34… → 310.
      expect(prorate(900, new Date('2024-02-20T00:00:00Z')).amount_cents).to.equal(310);
      // builder → quant on 2 May: 40,000 × 30 / 31 = 38,709.67… → 38,710.
      expect(prorate(40_000, new Date('2024-05-02T00:00:00Z')).amount_cents).to.equal(38_710);
      // Half a cent rounds up: 1 × 15 / 30 = 0.5 → 1; 3 × 5 / 30 = 0.5 → 1.
      expect(prorate(1, new Date('2024-04-16T00:00:00Z')).amount_cents).to.equal(1);
      expect(prorate(3, new Date('2024-04-26T00:00:00Z')).amount_cents).to.equal(1);
    });

    it('charges the whole difference on the 1st and never more than it', () => {
      for (let day = 1; day <= 31; day++) {
        const at = new Date(Date.UTC(2024, 0, day, 12));
        const p = prorate(9_900, at);
        expect(p.amount_cents).to.be.at.most(9_900);
        expect(p.amount_cents).to.be.at.least(0);
        if (day === 1) expect(p.amount_cents).to.equal(9_900);
        expect(p).to.deep.equal(expected(9_900, at.toISOString()));
      }
    });
  });

  describe('daysInMonth()', () => {
    it('gives every month of a common and a leap year, in UTC', () => {
      for (const year of [2023, 2024, 2100, 2000]) {
        for (let month = 1; month <= 12; month++) {
          const first = new Date(Date.UTC(year, month - 1, 1));
          const last = new Date(Date.UTC(year, month - 1, calendarDays(year, month), 23, 59, 59, 999));
          expect(daysInMonth(first), `${year}-${month} first`).to.equal(calendarDays(year, month));
          expect(daysInMonth(last), `${year}-${month} last`).to.equal(calendarDays(year, month));
        }
      }
    });

    it('reads the month of the UTC date, not of the local one', () => {
      // 31 January 23:30 at UTC-05:00 is 1 February 04:30Z: February 2024, 29 days.
      expect(daysInMonth(new Date('2024-01-31T23:30:00-05:00'))).to.equal(29);
      // 1 March 00:30 at UTC+02:00 is 29 February 22:30Z.
      expect(daysInMonth(new Date('2024-03-01T00:30:00+02:00'))).to.equal(29);
    });
  });

  describe('monthlyPriceCents()', () => {
    it('is each self-serve tier’s monthly price in cents, and null for enterprise', () => {
      expect(monthlyPriceCents('free')).to.equal(0);
      expect(monthlyPriceCents('hobbyist')).to.equal(1_900);
      expect(monthlyPriceCents('builder')).to.equal(9_900);
      expect(monthlyPriceCents('quant')).to.equal(49_900);
      expect(monthlyPriceCents('enterprise')).to.equal(null);
    });

    it('follows the plans table', () => {
      for (const tier of TIERS) {
        const usd = PLANS[tier].monthly_price_usd;
        expect(monthlyPriceCents(tier), tier).to.equal(usd === null ? null : Number((usd * 100).toFixed(0)));
      }
    });

    it('prices the Pro membership in cents', () => {
      expect(PRO_MONTHLY_PRICE_CENTS).to.equal(900);
      expect(PRO_MONTHLY_PRICE_CENTS).to.equal(Number((PRO_MONTHLY_PRICE_USD * 100).toFixed(0)));
    });
  });
});
