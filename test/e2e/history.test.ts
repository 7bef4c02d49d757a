import { expect } from 'chai';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { tickers as tickerDocs } from '../../projections/reference/reference.projection.js';
import { scoreVersions, type ScoreVersion } from '../../projections/score-history/score-history.projection.js';
import { MAX_ROWS_PER_CALL } from '../../queries/get-multi-ticker-history/get-multi-ticker-history.query.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import type { Tier } from '../../src/domain/plans.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

/**
 * Scores, single-ticker history and multi-ticker history over real HTTP, on the demo dataset as
 * published by Friday 2019-06-14 12:00 UTC: that day's scores (22:00) are not out yet, so paid keys
 * see Thursday 2019-06-13 and free keys, 7 days behind, Friday 2019-06-07.
 */
const NOW = '2019-06-14T12:00:00Z';
const TODAY = '2019-06-14';
const PAID_AS_OF = '2019-06-13';
const FREE_AS_OF = '2019-06-07';
const FREE_FLOOR = addDays(TODAY, -90); // 2019-03-16, a Saturday
const FIRST_DAY = '2019-01-02';

const ts = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
const credits = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));
const dates = (rows: { date: string }[]) => rows.map((r) => r.date);
/** The same instant written in local time at an offset such as `-05:00` (`%2B` or `+` for plus). */
function withOffset(iso: string, offset: string): string {
  const sign = offset.startsWith('-') ? -1 : 1;
  const [h, m] = offset.replace(/^(%2B|\+|-)/, '').split(':').map(Number);
  const local = new Date(Date.parse(iso) + sign * (h! * 60 + m!) * 60_000).toISOString().slice(0, 19);
  return `${local}${offset}`;
}

describe('Scores and history over HTTP', function () {
  this.timeout(120_000);
  let server: TestServer;
  let top100: string[];
  /** A ticker outside the free tier's top100. */
  let outside: string;

  before(async () => {
    server = await startTestServer({ now: NOW });
    const ranked = await server.services.reads.find(tickerDocs, {}, { sort: [['size_rank', 1]] });
    top100 = ranked.items.slice(0, 100).map((t) => t.symbol);
    outside = ranked.items.find((t) => t.size_rank > 100)!.symbol;
  });
  after(() => server.stop());

  const get = (path: string, key: string = demoKey(server.dir, 'quant')) => getJson(`${server.url}${path}`, key);
  async function freshKey(tier: Tier): Promise<string> {
    const issued = await createAccountWithKey(server.services, { tier, email: `${tier}@example.test` });
    await server.services.runner.waitForHead();
    return issued.key;
  }
  /** A demo restatement of a top100 ticker between two dates: the superseded version. */
  async function demoRestatement(from: string, to: string): Promise<ScoreVersion> {
    const page = await server.services.reads.find(scoreVersions, { date: { $gte: from, $lte: to } }, { sort: [['ticker', 1], ['date', 1]] });
    const v = page.items.find((x) => top100.includes(x.ticker) && x.version === 1);
    expect(v, `a demo restatement of a top100 ticker dated ${from}..${to}`).to.not.equal(undefined);
    return v!;
  }

  describe('GET /v1/scores/{ticker}', () => {
    it('gives a paid key the latest published day, with date equal to as_of', async () => {
      const r = await get('/v1/scores/AAPL');
      expect(r.status).to.equal(200);
      expect(r.body).to.include({ ticker: 'AAPL', date: PAID_AS_OF, as_of: PAID_AS_OF });
    });

    it('gives a free key the latest day on or before today − 7, at the value it has now', async () => {
      const r = await get('/v1/scores/aapl', demoKey(server.dir, 'free'));
      expect(r.status).to.equal(200);
      expect(r.body).to.include({ ticker: 'AAPL', date: FREE_AS_OF, as_of: FREE_AS_OF });
      const h = await get(`/v1/scores/AAPL/history?start=${FREE_AS_OF}&end=${FREE_AS_OF}`);
      expect(h.body.rows[0]).to.include({ main_street: r.body.main_street, wall_street: r.body.wall_street, service_score: r.body.service_score });
    });

    it('refuses a free key a ticker outside its top100 with 403 coverage, and serves it to a paid key', async () => {
      const r = await get(`/v1/scores/${outside}`, demoKey(server.dir, 'free'));
      expect(r.status).to.equal(403);
      expect(r.body.code).to.equal('coverage');
      expect(r.body.detail).to.contain(outside);
      expect((await get(`/v1/scores/${outside}`)).status).to.equal(200);
    });

    it('answers an unknown ticker, and a value longer than 12 characters, with 404 not_found', async () => {
      const unknown = await get('/v1/scores/NOPEX', demoKey(server.dir, 'free'));
      expect(unknown.status).to.equal(404);
      expect(unknown.body.code).to.equal('not_found');
      const long = await get('/v1/scores/ABCDEFGHIJKLM');
      expect(long.status).to.equal(404);
      expect(long.body.code).to.equal('not_found');
      expect(long.body.detail).to.match(/12/);
    });

    it('costs 2 credits', async () => {
      const key = await freshKey('free');
      const r = await get('/v1/scores/MSFT', key);
      expect(r.status).to.equal(200);
      expect(credits(r)).to.equal(998);
    });
  });

  describe('GET /v1/scores/{ticker}/history', () => {
    it('answers with exactly the spec fields', async () => {
      const r = await get('/v1/scores/MSFT/history?start=2019-06-03&end=2019-06-07');
      expect(r.status).to.equal(200);
      expect(Object.keys(r.body).sort()).to.deep.equal(
        ['as_known_at', 'as_of', 'citation_url', 'count', 'history_floor', 'provenance_note', 'rows', 'ticker'].sort(),
      );
      expect(Object.keys(r.body.rows[0]).sort()).to.deep.equal(['date', 'estimated', 'main_street', 'service_score', 'wall_street']);
      expect(dates(r.body.rows)).to.deep.equal(['2019-06-03', '2019-06-04', '2019-06-05', '2019-06-06', '2019-06-07']);
      expect(r.body).to.include({ count: 5, history_floor: '2019-06-03', as_of: PAID_AS_OF });
    });

    describe('When start is before the free tier floor (90 days)', () => {
      it('clamps it silently and reports the effective start as history_floor', async () => {
        const r = await get('/v1/scores/AAPL/history?start=2019-01-01', demoKey(server.dir, 'free'));
        expect(r.status).to.equal(200);
        expect(r.body.history_floor).to.equal(FREE_FLOOR);
        expect(r.body.rows[0].date).to.equal('2019-03-18'); // the first trading day on or after the floor
      });

      it('reports the floor when start is omitted', async () => {
        const r = await get('/v1/scores/AAPL/history', demoKey(server.dir, 'free'));
        expect(r.body.history_floor).to.equal(FREE_FLOOR);
        expect(r.body.rows[0].date).to.equal('2019-03-18');
      });
    });

    it('reports the first available date as history_floor for a tier with the full history', async () => {
      const r = await get('/v1/scores/AAPL/history');
      expect(r.body.history_floor).to.equal(FIRST_DAY);
      expect(r.body.rows[0].date).to.equal(FIRST_DAY);
    });

    it('caps end at the caller as-of date (7 days behind on free)', async () => {
      const free = await get('/v1/scores/AAPL/history?start=2019-06-01&end=2019-12-31', demoKey(server.dir, 'free'));
      expect(dates(free.body.rows).at(-1)).to.equal(FREE_AS_OF);
      expect(free.body.as_of).to.equal(FREE_AS_OF);
      const paid = await get('/v1/scores/AAPL/history?start=2019-06-01&end=2019-12-31');
      expect(dates(paid.body.rows).at(-1)).to.equal(PAID_AS_OF);
    });

    it('refuses a free key a ticker outside its top100 with 403 coverage', async () => {
      const r = await get(`/v1/scores/${outside}/history`, demoKey(server.dir, 'free'));
      expect(r.status).to.equal(403);
      expect(r.body.code).to.equal('coverage');
    });

    it('refuses malformed dates and instants with 400 naming the parameter', async () => {
      for (const [query, parameter] of [
        ['start=2019-02-30', 'start'],
        ['end=20190601', 'end'],
        ['as_known_at=yesterday', 'as_known_at'],
        ['as_known_at=2019-06-10T25:00:00Z', 'as_known_at'],
        ['as_known_at=2019-06-10T12:00:00', 'as_known_at'],
      ] as const) {
        const r = await get(`/v1/scores/AAPL/history?${query}`);
        expect(r.status, query).to.equal(400);
        expect(r.body.code).to.equal('bad_request');
        expect(r.body.errors[0].parameter, query).to.equal(parameter);
        expect(r.body.detail).to.contain(parameter);
      }
    });

    it('costs 1 credit per row, and nothing for an empty answer', async () => {
      const key = await freshKey('free');
      const r = await get('/v1/scores/AAPL/history?start=2019-06-03&end=2019-06-07', key);
      expect(r.body.count).to.equal(5);
      expect(credits(r)).to.equal(995);
      const empty = await get('/v1/scores/AAPL/history?start=2019-06-08&end=2019-06-09', key);
      expect(empty.status).to.equal(200);
      expect(empty.body.count).to.equal(0);
      expect(credits(empty)).to.equal(995);
    });

    describe('When as_known_at is set (point in time)', () => {
      it('gives the value published before a restatement, and the restated value after it', async () => {
        const v = await demoRestatement('2019-05-01', '2019-06-07');
        const path = `/v1/scores/${v.ticker}/history?start=${v.date}&end=${v.date}`;
        const before = await get(`${path}&as_known_at=${v.valid_from}`);
        const old = before.body.rows[0];
        expect(old).to.include({ date: v.date, main_street: v.main_street, wall_street: v.wall_street, service_score: v.service_score });
        const after = await get(`${path}&as_known_at=${v.valid_to}`);
        const now = await get(path);
        expect(after.body.rows[0]).to.deep.equal(now.body.rows[0]);
        expect(now.body.rows[0].main_street !== v.main_street || now.body.rows[0].wall_street !== v.wall_street).to.equal(true);
      });

      it('echoes the instant used, and the provenance note names the vintage served', async () => {
        const at = await get('/v1/scores/AAPL/history?start=2019-06-03&as_known_at=2019-06-05T18:00:00-05:00');
        expect(at.body.as_known_at).to.equal('2019-06-05T23:00:00.000Z');
        expect(at.body.provenance_note).to.match(/^Daily scores as published at 2019-06-05T23:00:00\.000Z: /);
        expect(at.body.provenance_note).to.not.contain('currently');
        const byDate = await get('/v1/scores/AAPL/history?start=2019-06-03&as_known_at=2019-06-05');
        expect(byDate.body.as_known_at).to.equal('2019-06-05T00:00:00.000Z');
        const current = await get('/v1/scores/AAPL/history?start=2019-06-03');
        expect(current.body.as_known_at).to.equal(null);
        expect(current.body.provenance_note).to.match(/^Daily scores as currently published\. /);
      });

      it('leaves out rows first published after the instant, and bills only the rows returned', async () => {
        const key = await freshKey('hobbyist');
        const r = await get('/v1/scores/AAPL/history?start=2019-06-03&as_known_at=2019-06-05T23:00:00Z', key);
        expect(dates(r.body.rows)).to.deep.equal(['2019-06-03', '2019-06-04', '2019-06-05']);
        expect(credits(r)).to.equal(25_000 - 3);
        const before = await get('/v1/scores/AAPL/history?start=2019-06-03&as_known_at=2019-06-05T21:59:59Z', key);
        expect(dates(before.body.rows)).to.deep.equal(['2019-06-03', '2019-06-04']);
      });
    });
  });

  describe('GET /v1/scores/history (many tickers)', () => {
    it('is routed to the multi-ticker history, not captured by /v1/scores/{ticker}', async () => {
      const r = await get('/v1/scores/history?tickers=AAPL&start=2019-06-10');
      expect(r.status).to.equal(200);
      expect(r.body.rows[0].ticker).to.equal('AAPL');
    });

    it('answers with the spec fields, rows ordered by ticker then date', async () => {
      const r = await get('/v1/scores/history?tickers=msft,AAPL,MSFT&start=2019-06-10&end=2019-06-12');
      expect(r.status).to.equal(200);
      expect(Object.keys(r.body).sort()).to.deep.equal(
        ['as_known_at', 'as_of', 'citation_url', 'count', 'end', 'has_more', 'next_since', 'rows', 'since', 'start', 'tickers'].sort(),
      );
      expect(Object.keys(r.body.rows[0]).sort()).to.deep.equal(
        ['date', 'divergence_gap', 'estimated', 'main_street', 'restated_at', 'service_score', 'ticker', 'wall_street'].sort(),
      );
      expect(r.body.rows.map((x: { ticker: string; date: string }) => `${x.ticker} ${x.date}`)).to.deep.equal([
        'AAPL 2019-06-10',
        'AAPL 2019-06-11',
        'AAPL 2019-06-12',
        'MSFT 2019-06-10',
        'MSFT 2019-06-11',
        'MSFT 2019-06-12',
      ]);
      expect(r.body).to.include({ count: 6, tickers: 2, start: '2019-06-10', end: '2019-06-12', since: null, as_known_at: null, has_more: false, as_of: PAID_AS_OF });
      expect(r.body.rows[0].restated_at).to.equal('2019-06-10 22:00:00');
      expect(r.body.rows[0].restated_at).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    });

    it('floors start at the tier depth and caps end at the as-of date', async () => {
      const free = await get('/v1/scores/history?tickers=AAPL&start=2019-01-01&end=2019-12-31', demoKey(server.dir, 'free'));
      expect(free.body).to.include({ start: FREE_FLOOR, end: FREE_AS_OF, as_of: FREE_AS_OF });
      expect(free.body.rows[0].date).to.equal('2019-03-18');
      expect(free.body.rows.at(-1).date).to.equal(FREE_AS_OF);
      const paid = await get('/v1/scores/history?tickers=AAPL&end=2019-12-31');
      expect(paid.body).to.include({ start: FIRST_DAY, end: PAID_AS_OF });
    });

    it('gives a key without tickers everything it can see: the top100 for a free key', async () => {
      const r = await get(`/v1/scores/history?start=${FREE_AS_OF}`, demoKey(server.dir, 'free'));
      expect(r.status).to.equal(200);
      expect(r.body.tickers).to.equal(100);
      expect(r.body.count).to.equal(100);
      expect(r.body.rows.every((x: { ticker: string }) => top100.includes(x.ticker))).to.equal(true);
      const paid = await get(`/v1/scores/history?start=${PAID_AS_OF}`);
      expect(paid.body.tickers).to.be.greaterThan(500);
    });

    it('refuses a free key tickers outside its top100 with 403 coverage naming them', async () => {
      const r = await get(`/v1/scores/history?tickers=AAPL,${outside}`, demoKey(server.dir, 'free'));
      expect(r.status).to.equal(403);
      expect(r.body.code).to.equal('coverage');
      expect(r.body.outside_coverage).to.deep.equal([outside]);
    });

    it('answers unknown tickers with 404 naming them', async () => {
      const r = await get('/v1/scores/history?tickers=AAPL,NOPEX,ZZZZ');
      expect(r.status).to.equal(404);
      expect(r.body.code).to.equal('not_found');
      expect(r.body.unknown_tickers).to.deep.equal(['NOPEX', 'ZZZZ']);
    });

    it('takes 50 tickers and refuses 51 with 400 naming tickers', async () => {
      const fifty = top100.slice(0, 50).join(',');
      const ok = await get(`/v1/scores/history?tickers=${fifty}&start=${PAID_AS_OF}`);
      expect(ok.status).to.equal(200);
      expect(ok.body).to.include({ count: 50, tickers: 50 });
      const r = await get(`/v1/scores/history?tickers=${top100.slice(0, 51).join(',')}&start=${PAID_AS_OF}`);
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal('bad_request');
      expect(r.body.errors[0].parameter).to.equal('tickers');
      expect(r.body.detail).to.match(/51/).and.match(/50/);
    });

    it('refuses malformed parameters with 400 naming them', async () => {
      for (const [query, parameter] of [
        ['tickers=', 'tickers'],
        ['tickers=AAPL,,MSFT', 'tickers'],
        ['tickers=ABCDEFGHIJKLM', 'tickers'],
        ['start=2019-6-1', 'start'],
        ['end=2019-06-31', 'end'],
        ['since=last-week', 'since'],
        ['since=2019-06-10T12:00:00+25:00', 'since'],
        ['since=2019-06-10T12:00:00', 'since'],
        ['as_known_at=1560000000', 'as_known_at'],
        ['as_known_at=2019-06-10T12:00', 'as_known_at'],
      ] as const) {
        const r = await get(`/v1/scores/history?${query}`);
        expect(r.status, query).to.equal(400);
        expect(r.body.code, query).to.equal('bad_request');
        expect(r.body.errors[0].parameter, query).to.equal(parameter);
      }
    });

    describe('When since is set', () => {
      it('returns exactly the rows published or restated since then, over the whole history', async () => {
        const since = '2019-06-12T00:00:00Z';
        const restated = await server.services.reads.find(scoreVersions, { valid_to: { $gte: '2019-06-12T00:00:00.000Z' } });
        const expected = [...new Set(restated.items.filter((x) => x.date < '2019-06-12').map((x) => `${x.ticker} ${x.date}`))].sort();
        const r = await get(`/v1/scores/history?since=${since}`);
        expect(r.status).to.equal(200);
        expect(r.body.since).to.equal(since);
        const old = r.body.rows.filter((x: { date: string }) => x.date < '2019-06-12');
        // Restated since: what the versions table says was superseded since then.
        expect(old.map((x: { ticker: string; date: string }) => `${x.ticker} ${x.date}`).sort()).to.deep.equal(expected);
        expect(old.length).to.be.greaterThan(0);
        for (const x of old) expect(x.restated_at >= '2019-06-12 00:00:00').to.equal(true);
        // New: every ticker's rows of the two days published since.
        const fresh = r.body.rows.filter((x: { date: string }) => x.date >= '2019-06-12');
        const day = await get('/v1/scores/history?start=2019-06-12&end=2019-06-13');
        expect(fresh.length).to.equal(day.body.count);
        expect(r.body.count).to.equal(fresh.length + old.length);
      });

      it('accepts a date, an ISO instant with offset, and a restated_at value', async () => {
        const v = await demoRestatement('2019-05-01', '2019-06-07');
        const restatedAt = ts(v.valid_to);
        // The same instant as restated_at, as an ISO instant in UTC, at -05:00, at +02:00 (encoded and not).
        for (const since of [restatedAt, v.valid_to, withOffset(v.valid_to, '-05:00'), withOffset(v.valid_to, '%2B02:00'), withOffset(v.valid_to, '+02:00')]) {
          const r = await get(`/v1/scores/history?tickers=${v.ticker}&since=${since}&end=${v.date}`);
          expect(r.status, since).to.equal(200);
          expect(r.body.rows.map((x: { date: string }) => x.date), since).to.include(v.date);
          const row = r.body.rows.find((x: { date: string }) => x.date === v.date);
          expect(row.restated_at).to.equal(restatedAt);
        }
        const byDate = await get(`/v1/scores/history?tickers=${v.ticker}&since=${v.valid_to.slice(0, 10)}&end=${v.date}`);
        expect(byDate.body.rows.map((x: { date: string }) => x.date)).to.include(v.date);
      });

      it('keeps a free key inside its window: rows up to its as-of date, top100 only', async () => {
        const r = await get('/v1/scores/history?since=2019-06-01', demoKey(server.dir, 'free'));
        expect(r.status).to.equal(200);
        expect(r.body.end).to.equal(FREE_AS_OF);
        expect(r.body.rows.every((x: { ticker: string; date: string }) => top100.includes(x.ticker) && x.date <= FREE_AS_OF)).to.equal(true);
        expect(r.body.rows.some((x: { date: string }) => x.date < '2019-06-01')).to.equal(true); // restated since
      });
    });

    describe('When as_known_at is set (point in time)', () => {
      it('gives each row as published at that instant, with that version restated_at', async () => {
        const v = await demoRestatement('2019-05-01', '2019-06-07');
        const path = `/v1/scores/history?tickers=${v.ticker}&start=${v.date}&end=${v.date}`;
        const before = await get(`${path}&as_known_at=${v.valid_from}`);
        expect(before.body.rows[0]).to.include({
          main_street: v.main_street,
          wall_street: v.wall_street,
          service_score: v.service_score,
          estimated: v.estimated,
          restated_at: ts(v.valid_from),
        });
        const after = await get(`${path}&as_known_at=${v.valid_to}`);
        const now = await get(path);
        expect(after.body.rows[0]).to.deep.equal(now.body.rows[0]);
        expect(now.body.rows[0].restated_at).to.equal(ts(v.valid_to));
        const unpublished = await get(`${path}&as_known_at=${addDays(v.date, -1)}`);
        expect(unpublished.body).to.include({ count: 0 });
      });

      it('echoes the instant used, null without one', async () => {
        const at = await get('/v1/scores/history?tickers=AAPL&start=2019-06-03&as_known_at=2019-06-05T23:00:00%2B01:00');
        expect(at.body.as_known_at).to.equal('2019-06-05T22:00:00.000Z');
        expect(at.body.rows.map((x: { date: string }) => x.date)).to.deep.equal(['2019-06-03', '2019-06-04', '2019-06-05']);
        expect((await get('/v1/scores/history?tickers=AAPL&start=2019-06-03')).body.as_known_at).to.equal(null);
      });

      it('combined with since, returns what changed between since and the instant', async () => {
        const v = await demoRestatement('2019-05-01', '2019-06-07');
        const r = await get(`/v1/scores/history?tickers=${v.ticker}&since=${v.valid_from}&as_known_at=${v.valid_to}`);
        const row = r.body.rows.find((x: { date: string }) => x.date === v.date);
        expect(row.restated_at).to.equal(ts(v.valid_to));
        expect(r.body.rows.every((x: { restated_at: string }) => x.restated_at >= ts(v.valid_from) && x.restated_at <= ts(v.valid_to))).to.equal(true);
      });
    });

    it('costs 1 credit per row, and nothing for an empty answer', async () => {
      const key = await freshKey('free');
      const r = await get('/v1/scores/history?tickers=AAPL,MSFT&start=2019-06-03&end=2019-06-05', key);
      expect(r.body.count).to.equal(6);
      expect(credits(r)).to.equal(994);
      const empty = await get('/v1/scores/history?tickers=AAPL&start=2019-06-08&end=2019-06-09', key);
      expect(empty.body.count).to.equal(0);
      expect(credits(empty)).to.equal(994);
    });

    describe('When a correction is ingested (a live restatement)', () => {
      it('is exactly what since returns, and as_known_at still shows the earlier value', async () => {
        const before = await get('/v1/scores/history?tickers=AAPL,CI&start=2019-04-02&end=2019-04-02');
        const rows = parseIngestFile(['ticker,date,main_street,wall_street', 'AAPL,2019-04-02,11.5,88.5', 'CI,2019-04-02,77.5,22.5'].join('\n'), 'csv');
        const written = await ingestRows(server.services.events, server.services.clock, rows);
        await server.services.runner.waitFor(written.position!);
        const sync = await get(`/v1/scores/history?since=${NOW}`);
        expect(sync.body.rows.map((x: { ticker: string; date: string }) => `${x.ticker} ${x.date}`)).to.deep.equal(['AAPL 2019-04-02', 'CI 2019-04-02']);
        expect(sync.body.rows[0]).to.include({ main_street: 11.5, wall_street: 88.5, divergence_gap: -77, restated_at: '2019-06-14 12:00:00' });
        const known = await get('/v1/scores/history?tickers=AAPL,CI&start=2019-04-02&end=2019-04-02&as_known_at=2019-06-14T11:59:59Z');
        expect(known.body.rows).to.deep.equal(before.body.rows);
      });
    });
  });

  describe('One rule for dates on both history endpoints and social heat', () => {
    const endpoints = ['/v1/scores/AAPL/history', '/v1/scores/history?tickers=AAPL', '/v1/scores/social-heat/AAPL'];
    const withDates = (path: string, dates: string) => `${path}${path.includes('?') ? '&' : '?'}${dates}`;

    it('answers a window that is empty, as sent (end before start) or once clamped, with 200, no rows, free, and the effective window', async () => {
      const key = await freshKey('free');
      // From a start after the free as-of date (2019-06-07), and up to an end before the free floor (2019-03-16).
      for (const [dates, start, end] of [
        ['start=2019-06-10', '2019-06-10', FREE_AS_OF],
        ['end=2019-01-10', FREE_FLOOR, '2019-01-10'],
        ['start=2019-04-10&end=2019-04-08', '2019-04-10', '2019-04-08'],
      ] as const) {
        for (const path of endpoints) {
          const r = await get(withDates(path, dates), key);
          expect(r.status, `${path} ${dates}`).to.equal(200);
          expect(r.body.rows, `${path} ${dates}`).to.deep.equal([]);
          expect(r.body.count).to.equal(0);
          expect(credits(r), `${path} ${dates}`).to.equal(1_000);
          expect(r.body.as_of).to.equal(FREE_AS_OF);
          if (path.includes('?tickers')) expect(r.body).to.include({ start, end, tickers: 0 });
          else expect(r.body.history_floor, `${path} ${dates}`).to.equal(start);
        }
      }
    });
  });
});

describe('History windows two years into the demo', function () {
  this.timeout(300_000);
  const NOW2 = '2021-07-01T12:00:00Z';
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: NOW2 });
  });
  after(() => server.stop());
  const get = (path: string, key: string) => getJson(`${server.url}${path}`, key);

  it('clamps a hobbyist start to 730 days back, on both history endpoints', async () => {
    const floor = addDays('2021-07-01', -730);
    expect(floor).to.equal('2019-07-02');
    const single = await get('/v1/scores/AAPL/history?start=2019-01-01&end=2019-07-31', demoKey(server.dir, 'hobbyist'));
    expect(single.body.history_floor).to.equal(floor);
    expect(single.body.rows[0].date).to.equal(floor);
    const multi = await get('/v1/scores/history?tickers=AAPL&start=2019-01-01&end=2019-07-31', demoKey(server.dir, 'hobbyist'));
    expect(multi.body.start).to.equal(floor);
    expect(multi.body.rows[0].date).to.equal(floor);
    const quant = await get('/v1/scores/AAPL/history?start=2019-01-01&end=2019-07-31', demoKey(server.dir, 'quant'));
    expect(quant.body.rows[0].date).to.equal(FIRST_DAY);
  });

  it(`refuses a multi-ticker query above ${MAX_ROWS_PER_CALL.toLocaleString('en-US')} rows with 422 and charges nothing`, async () => {
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email: 'quant@example.test' });
    await server.services.runner.waitForHead();
    const r = await get('/v1/scores/history', issued.key);
    expect(r.status).to.equal(422);
    expect(r.body.code).to.equal('limit_exceeded');
    expect(r.body.maximum).to.equal(MAX_ROWS_PER_CALL);
    expect(credits(r)).to.equal(2_500_000);
    const narrowed = await get('/v1/scores/history?start=2021-06-01', issued.key);
    expect(narrowed.status).to.equal(200);
    expect(credits(narrowed)).to.equal(2_500_000 - narrowed.body.count);
  });
});
