import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { tickers as tickerDocs } from '../../projections/reference/reference.projection.js';
import { seriesBetween, webVisits } from '../../projections/shared/daily-series.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import type { Tier } from '../../src/domain/plans.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

/**
 * The social heat series over real HTTP, on the demo dataset as published by Tuesday 2020-03-31
 * 12:00 UTC: that day's data (21:30 visits, 22:00 scores) is not out yet, so paid keys see Monday
 * 2020-03-30 and free keys, 7 days behind, Tuesday 2020-03-24.
 */
const NOW = '2020-03-31T12:00:00Z';
const TODAY = '2020-03-31';
const PAID_AS_OF = '2020-03-30';
const FREE_AS_OF = '2020-03-24';
const FREE_FLOOR = addDays(TODAY, -90); // 2020-01-01, a holiday
const FIRST_DAY = '2019-01-02';

const credits = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));
const dates = (rows: { date: string }[]) => rows.map((r) => r.date);

describe('GET /v1/scores/social-heat/{ticker}', function () {
  this.timeout(120_000);
  let server: TestServer;
  /** A ticker outside the free tier's top100. */
  let outside: string;

  before(async () => {
    server = await startTestServer({ now: NOW });
    const ranked = await server.services.reads.find(tickerDocs, {}, { sort: [['size_rank', 1]] });
    outside = ranked.items.find((t) => t.size_rank > 100)!.symbol;
  });
  after(() => server.stop());

  const get = (path: string, key: string = demoKey(server.dir, 'quant')) => getJson(`${server.url}${path}`, key);
  async function freshKey(tier: Tier): Promise<string> {
    const issued = await createAccountWithKey(server.services, { tier, email: `${tier}-heat@example.test` });
    await server.services.runner.waitForHead();
    return issued.key;
  }

  it('answers with the spec fields and the provenance wrapper', async () => {
    const r = await get('/v1/scores/social-heat/aapl?start=2020-03-23&end=2020-03-27');
    expect(r.status).to.equal(200);
    expect(Object.keys(r.body).sort()).to.deep.equal(
      ['as_of', 'citation_url', 'count', 'formula', 'history_floor', 'metric', 'provenance_note', 'rows', 'ticker'].sort(),
    );
    expect(r.body).to.include({ ticker: 'AAPL', metric: 'social_heat_live', count: 5, history_floor: '2020-03-23', as_of: PAID_AS_OF });
    expect(r.body.formula).to.match(/visits/).and.match(/365/).and.match(/100/);
    expect(r.body.provenance_note).to.match(/live/i);
    expect(r.body.citation_url).to.match(new RegExp(`/stocks/AAPL\\?as_of=${PAID_AS_OF}$`));
    expect(dates(r.body.rows)).to.deep.equal(['2020-03-23', '2020-03-24', '2020-03-25', '2020-03-26', '2020-03-27']);
    for (const row of r.body.rows) {
      expect(Object.keys(row).sort()).to.deep.equal(['date', 'value']);
      expect(row.value).to.be.within(0, 100);
      expect(Math.round(row.value * 100) / 100).to.equal(row.value);
    }
  });

  it('is routed to the social heat series, and leaves /v1/scores/{ticker}/history to the score history', async () => {
    const heat = await get('/v1/scores/social-heat/AAPL?start=2020-03-27&end=2020-03-27');
    expect(heat.status).to.equal(200);
    expect(heat.body.metric).to.equal('social_heat_live');
    const history = await get('/v1/scores/AAPL/history?start=2020-03-27&end=2020-03-27');
    expect(history.status).to.equal(200);
    expect(history.body).to.not.have.property('metric');
    expect(history.body.rows[0]).to.have.property('service_score');
  });

  it('computes each value from the stored web visits by the formula', async () => {
    const day = '2020-03-02';
    const from = addDays(day, -365); // 2019-03-03: the window is 2019-03-03 … 2020-03-01
    const buckets = await server.services.reads.find(webVisits, { ticker: 'MSFT', year: { $gte: from.slice(0, 4), $lte: day.slice(0, 4) } });
    const series = seriesBetween(buckets.items, from, day);
    const visits = series.find((p) => p.date === day)!.value;
    const trailing = series.filter((p) => p.date >= from && p.date < day).map((p) => p.value);
    expect(trailing.length).to.be.greaterThan(200);
    const expected = Math.round((visits / Math.max(visits, ...trailing)) * 100 * 100) / 100;
    expect(expected, 'a day below its trailing peak, so the division is exercised').to.be.below(100);
    const r = await get(`/v1/scores/social-heat/MSFT?start=${day}&end=${day}`);
    expect(r.body.rows).to.deep.equal([{ date: day, value: expected }]);
  });

  describe('When start is before the free tier floor (90 days)', () => {
    it('clamps it silently and reports the effective start as history_floor', async () => {
      const r = await get('/v1/scores/social-heat/AAPL?start=2019-06-01', demoKey(server.dir, 'free'));
      expect(r.status).to.equal(200);
      expect(r.body.history_floor).to.equal(FREE_FLOOR);
      expect(r.body.rows[0].date).to.equal('2020-01-02'); // the first trading day on or after the floor
      expect(dates(r.body.rows).at(-1)).to.equal(FREE_AS_OF);
      expect(r.body.as_of).to.equal(FREE_AS_OF);
    });

    it('reports the floor when start is omitted, with the same values as a paid key (the window reaches before the floor)', async () => {
      const free = await get('/v1/scores/social-heat/AAPL', demoKey(server.dir, 'free'));
      expect(free.body.history_floor).to.equal(FREE_FLOOR);
      expect(free.body.rows[0].date).to.equal('2020-01-02');
      const paid = await get(`/v1/scores/social-heat/AAPL?start=2020-01-02&end=${FREE_AS_OF}`);
      expect(free.body.rows).to.deep.equal(paid.body.rows);
    });
  });

  it('reports the first available date as history_floor for a tier with the full history', async () => {
    const r = await get('/v1/scores/social-heat/AAPL');
    expect(r.body.history_floor).to.equal(FIRST_DAY);
    expect(r.body.rows[0]).to.deep.equal({ date: FIRST_DAY, value: 100 }); // no earlier visits
    expect(dates(r.body.rows).at(-1)).to.equal(PAID_AS_OF);
    expect(r.body.count).to.equal(r.body.rows.length);
  });

  it('caps end at the caller as-of date (7 days behind on free)', async () => {
    const free = await get('/v1/scores/social-heat/AAPL?start=2020-03-01&end=2020-12-31', demoKey(server.dir, 'free'));
    expect(dates(free.body.rows).at(-1)).to.equal(FREE_AS_OF);
    const paid = await get('/v1/scores/social-heat/AAPL?start=2020-03-01&end=2020-12-31');
    expect(dates(paid.body.rows).at(-1)).to.equal(PAID_AS_OF);
  });

  it('costs 1 credit per row, and nothing for an empty answer', async () => {
    const key = await freshKey('free');
    const r = await get('/v1/scores/social-heat/AAPL?start=2020-03-16&end=2020-03-20', key);
    expect(r.body.count).to.equal(5);
    expect(credits(r)).to.equal(995);
    const empty = await get('/v1/scores/social-heat/AAPL?start=2020-03-21&end=2020-03-22', key);
    expect(empty.status).to.equal(200);
    expect(empty.body.count).to.equal(0);
    expect(credits(empty)).to.equal(995);
  });

  it('refuses a free key a ticker outside its top100 with 403 coverage, and serves it to a paid key', async () => {
    const r = await get(`/v1/scores/social-heat/${outside}`, demoKey(server.dir, 'free'));
    expect(r.status).to.equal(403);
    expect(r.body.code).to.equal('coverage');
    expect((await get(`/v1/scores/social-heat/${outside}?start=${PAID_AS_OF}`)).status).to.equal(200);
  });

  it('answers an unknown ticker with 404 not_found', async () => {
    for (const ticker of ['NOPEX', 'ABCDEFGHIJKLM']) {
      const r = await get(`/v1/scores/social-heat/${ticker}`);
      expect(r.status, ticker).to.equal(404);
      expect(r.body.code, ticker).to.equal('not_found');
    }
  });

  it('refuses malformed dates with 400 naming the parameter', async () => {
    for (const [query, parameter] of [
      ['start=2020-02-30', 'start'],
      ['end=20200301', 'end'],
    ] as const) {
      const r = await get(`/v1/scores/social-heat/AAPL?${query}`);
      expect(r.status, query).to.equal(400);
      expect(r.body.code, query).to.equal('bad_request');
      expect(r.body.errors[0].parameter, query).to.equal(parameter);
    }
  });
});
