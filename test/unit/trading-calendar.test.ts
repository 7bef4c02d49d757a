import { expect } from 'chai';
import {
  addDays,
  easterSunday,
  isDateString,
  isTradingDay,
  nextTradingDay,
  nyseHolidays,
  previousTradingDay,
  toDateString,
  tradingDaysBetween,
} from '../../src/domain/trading-calendar.js';

/** Full-day closures as published by the NYSE. */
const KNOWN_HOLIDAYS: Record<number, string[]> = {
  2019: ['2019-01-01', '2019-01-21', '2019-02-18', '2019-04-19', '2019-05-27', '2019-07-04', '2019-09-02', '2019-11-28', '2019-12-25'],
  2020: ['2020-01-01', '2020-01-20', '2020-02-17', '2020-04-10', '2020-05-25', '2020-07-03', '2020-09-07', '2020-11-26', '2020-12-25'],
  2021: ['2021-01-01', '2021-01-18', '2021-02-15', '2021-04-02', '2021-05-31', '2021-07-05', '2021-09-06', '2021-11-25', '2021-12-24'],
  2022: ['2022-01-17', '2022-02-21', '2022-04-15', '2022-05-30', '2022-06-20', '2022-07-04', '2022-09-05', '2022-11-24', '2022-12-26'],
  2023: ['2023-01-02', '2023-01-16', '2023-02-20', '2023-04-07', '2023-05-29', '2023-06-19', '2023-07-04', '2023-09-04', '2023-11-23', '2023-12-25'],
  2024: ['2024-01-01', '2024-01-15', '2024-02-19', '2024-03-29', '2024-05-27', '2024-06-19', '2024-07-04', '2024-09-02', '2024-11-28', '2024-12-25'],
  2025: ['2025-01-01', '2025-01-09', '2025-01-20', '2025-02-17', '2025-04-18', '2025-05-26', '2025-06-19', '2025-07-04', '2025-09-01', '2025-11-27', '2025-12-25'],
  2026: ['2026-01-01', '2026-01-19', '2026-02-16', '2026-04-03', '2026-05-25', '2026-06-19', '2026-07-03', '2026-09-07', '2026-11-26', '2026-12-25'],
};

describe('NYSE trading calendar', () => {
  describe('holidays', () => {
    for (const [year, days] of Object.entries(KNOWN_HOLIDAYS)) {
      it(`match the exchange's published closures for ${year}`, () => {
        expect(nyseHolidays(Number(year))).to.deep.equal(days);
        for (const d of days) expect(isTradingDay(d), d).to.equal(false);
      });
    }

    it('does not close the Friday before a Saturday New Year (2021-12-31 and 2027-12-31 trade)', () => {
      expect(isTradingDay('2021-12-31')).to.equal(true);
      expect(isTradingDay('2027-12-31')).to.equal(true);
    });

    it('observes Saturday holidays on Friday and Sunday holidays on Monday', () => {
      expect(isTradingDay('2027-06-18')).to.equal(false); // Juneteenth on a Saturday
      expect(isTradingDay('2022-06-20')).to.equal(false); // Juneteenth on a Sunday
      expect(isTradingDay('2027-12-24')).to.equal(false); // Christmas on a Saturday
      expect(isTradingDay('2028-12-25')).to.equal(false); // Christmas on a Monday
    });

    it('has no Juneteenth closure before 2022', () => {
      expect(isTradingDay('2021-06-18')).to.equal(true);
      expect(isTradingDay('2020-06-19')).to.equal(true);
    });

    it('computes Easter for known years', () => {
      expect(easterSunday(2019)).to.equal('2019-04-21');
      expect(easterSunday(2024)).to.equal('2024-03-31');
      expect(easterSunday(2030)).to.equal('2030-04-21');
    });
  });

  describe('trading-day counts', () => {
    const counts: Record<number, number> = { 2019: 252, 2020: 253, 2021: 252, 2022: 251, 2023: 250, 2024: 252, 2025: 250 };
    for (const [year, n] of Object.entries(counts)) {
      it(`has ${n} trading days in ${year}`, () => {
        expect(tradingDaysBetween(`${year}-01-01`, `${year}-12-31`)).to.have.length(n);
      });
    }

    it('includes both ends and never a weekend', () => {
      const days = tradingDaysBetween('2024-07-01', '2024-07-12');
      expect(days[0]).to.equal('2024-07-01');
      expect(days.at(-1)).to.equal('2024-07-12');
      expect(days).to.not.include('2024-07-04');
      expect(days).to.have.length(9);
      expect(tradingDaysBetween('2024-07-06', '2024-07-07')).to.deep.equal([]);
      expect(tradingDaysBetween('2024-07-10', '2024-07-01')).to.deep.equal([]);
    });

    it('agrees with isTradingDay on every day 2019..2030', () => {
      const days = new Set(tradingDaysBetween('2019-01-01', '2030-12-31'));
      for (let d = '2019-01-01'; d <= '2030-12-31'; d = addDays(d, 1)) {
        expect(isTradingDay(d), d).to.equal(days.has(d));
      }
    });
  });

  describe('stepping', () => {
    it('skips weekends and holidays forwards and backwards', () => {
      expect(nextTradingDay('2024-07-03')).to.equal('2024-07-05');
      expect(nextTradingDay('2024-12-31')).to.equal('2025-01-02');
      expect(nextTradingDay('2025-01-08')).to.equal('2025-01-10');
      expect(previousTradingDay('2024-07-05')).to.equal('2024-07-03');
      expect(previousTradingDay('2024-01-02')).to.equal('2023-12-29');
      expect(previousTradingDay('2024-03-30')).to.equal('2024-03-28');
    });

    it('adds calendar days across month and year ends, and formats UTC dates', () => {
      expect(addDays('2024-02-28', 1)).to.equal('2024-02-29');
      expect(addDays('2024-12-31', 1)).to.equal('2025-01-01');
      expect(addDays('2025-01-01', -1)).to.equal('2024-12-31');
      expect(toDateString(new Date('2024-03-10T23:59:59.999Z'))).to.equal('2024-03-10');
    });

    it('rejects malformed dates', () => {
      expect(() => isTradingDay('2024-02-30')).to.throw(RangeError);
      expect(() => addDays('20240101', 1)).to.throw(RangeError);
    });

    it('tells a real YYYY-MM-DD date from text that only looks like one (the one check of API parameters, ingest and the stock page)', () => {
      for (const ok of ['2024-02-29', '2019-01-02', '0050-06-30', '9999-12-31']) expect(isDateString(ok), ok).to.equal(true);
      for (const bad of ['2023-02-29', '2024-02-30', '2024-13-01', '2024-00-10', '2024-1-01', '20240101', '2024-01-01T00:00:00Z', ' 2024-01-01', '']) {
        expect(isDateString(bad), bad).to.equal(false);
      }
    });
  });
});
