import { expect } from 'chai';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';

const scores = {
  date: '2024-01-02',
  published_at: '2024-01-02T22:00:00.000Z',
  rows: [
    { ticker: 'AAPL', main_street: 53.8, wall_street: 56.9, service_score: 54.9, estimated: false },
    { ticker: 'MSFT', main_street: 66.6, wall_street: 55.5, service_score: 61.5, estimated: true },
  ],
};
const closes = { date: '2024-01-02', closes: [{ ticker: 'AAPL', close: 185.64 }, { ticker: 'MSFT', close: 370.87 }] };
const visits = { date: '2024-01-02', visits: [{ ticker: 'AAPL', visits: 13825542 }, { ticker: 'MSFT', visits: 9212796 }] };
const restated = { date: '2024-01-02', restated_at: '2024-01-05T09:00:00.000Z', rows: [scores.rows[1]!] };

/** What a reader gets back for data written with the encoding: through JSON, as the log stores it. */
const roundTrip = (type: string, data: unknown) => logEncoding.decode(type, JSON.parse(JSON.stringify(logEncoding.encode(type, data))));

describe('Log encoding of the bulk events', () => {
  for (const [type, data] of [
    ['ScoresPublished', scores],
    ['ScoresRestated', restated],
    ['ClosePricesRecorded', closes],
    ['WebVisitsRecorded', visits],
  ] as const) {
    describe(type, () => {
      it('stores the rows as one array per field, each field name once', () => {
        const stored = logEncoding.encode(type, data) as Record<string, unknown>;
        const key = 'rows' in data ? 'rows' : 'closes' in data ? 'closes' : 'visits';
        expect(stored).to.not.have.property(key);
        const table = stored['table'] as Record<string, unknown[]>;
        const rows = (data as unknown as Record<string, Record<string, unknown>[]>)[key]!;
        expect(Object.keys(table)).to.deep.equal(Object.keys(rows[0]!));
        for (const field of Object.keys(table)) expect(table[field]).to.deep.equal(rows.map((r) => r[field]));
        // Smaller from two rows on (one row costs its brackets).
        if (rows.length > 1) expect(JSON.stringify(stored).length).to.be.lessThan(JSON.stringify(data).length);
      });

      it('reads back exactly what was written: same values, same key order', () => {
        expect(JSON.stringify(roundTrip(type, data))).to.equal(JSON.stringify(data));
      });

      it('reads data written with rows (before the encoding) as it is', () => {
        expect(logEncoding.decode(type, JSON.parse(JSON.stringify(data)))).to.deep.equal(data);
      });
    });
  }

  it('keeps rows that a table would not give back exactly: a field more or less, another order, a non-object, none at all', () => {
    const cases = [
      { ...closes, closes: [{ close: 1, ticker: 'AAPL' }] },
      { ...closes, closes: [{ ticker: 'AAPL', close: 1, currency: 'USD' }] },
      { ...closes, closes: [{ ticker: 'AAPL', close: 1 }, { ticker: 'MSFT' }] },
      { ...closes, closes: [{ ticker: 'AAPL', close: 1 }, null] },
      { ...closes, closes: [] },
      { date: '2024-01-02' },
    ];
    for (const data of cases) {
      expect(logEncoding.encode('ClosePricesRecorded', data)).to.equal(data);
      expect(JSON.stringify(roundTrip('ClosePricesRecorded', data))).to.equal(JSON.stringify(data));
    }
  });

  it('leaves every other event type alone', () => {
    const earnings = { rows: [{ ticker: 'AAPL', date: '2024-01-25' }] };
    expect(logEncoding.encode('EarningsDatesScheduled', earnings)).to.equal(earnings);
    expect(logEncoding.decode('EarningsDatesScheduled', { table: { ticker: ['AAPL'] } })).to.deep.equal({ table: { ticker: ['AAPL'] } });
    expect(logEncoding.encode('CreditsDebited', 'x')).to.equal('x');
  });

  it('refuses a table whose columns differ in length instead of inventing rows', () => {
    const broken = { date: '2024-01-02', table: { ticker: ['AAPL', 'MSFT'], close: [1] } };
    expect(() => logEncoding.decode('ClosePricesRecorded', broken)).to.throw(/ClosePricesRecorded: malformed table/);
  });
});
