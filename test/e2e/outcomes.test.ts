import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { scoreAt } from '../../projections/shared/columns.js';
import { dailyScores, tickerIndex, type DailyScores } from '../../projections/shared/daily-scores.js';
import { divergenceDates, divergenceDays, divergenceEvents, scoreMoves, scoredCells, type DivergenceCell } from '../../projections/divergence/divergence.projection.js';
import { tickers } from '../../projections/reference/reference.projection.js';
import { prices, seriesBetween } from '../../projections/shared/daily-series.js';
import type { Tier } from '../../src/domain/plans.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

// 23:00 UTC on Tuesday 2019-12-31: that day's scores (22:00) are out. Free keys trail 7 days.
const NOW = '2019-12-31T23:00:00Z';
const BASE = 'https://api.example.test';
const LIVE_AS_OF = '2019-12-31';
const FREE_AS_OF = '2019-12-24';

type Row = Record<string, any>;
const sortedKeys = (o: object) => Object.keys(o).sort();
const round2 = (x: number) => Math.round(x * 100) / 100;
const DAY_MS = 86_400_000;

describe('Outcome endpoints over HTTP', function () {
  this.timeout(180_000);
  let server: TestServer;
  let live: DailyScores;
  /** The cells of the tickers scored on the live as-of date. */
  let liveDiv: Record<string, DivergenceCell>;
  let top100: Set<string>;
  const cellsOn = async (date: string) => {
    const reads = server.services.reads;
    const [day, scores] = await Promise.all([reads.get(divergenceDays, date), reads.get(dailyScores, date)]);
    expect(day, `divergence day ${date}`).to.not.equal(null);
    return scoredCells(day!, scores!);
  };

  before(async () => {
    server = await startTestServer({ now: NOW, env: { PUBLIC_BASE_URL: BASE } });
    const reads = server.services.reads;
    live = (await reads.get(dailyScores, LIVE_AS_OF))!;
    expect(live, 'live cross-section').to.not.equal(null);
    liveDiv = await cellsOn(LIVE_AS_OF);
    top100 = new Set((await reads.find(tickers, { size_rank: { $lte: 100 } })).items.map((t) => t.symbol));
  });
  after(() => server.stop());

  const get = (path: string, key?: string) => getJson(`${server.url}${path}`, key);
  const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));
  async function newKey(tier: Tier) {
    const issued = await createAccountWithKey(server.services, { tier, pro: false, email: `${tier}-outcomes@example.test` });
    await server.services.runner.waitForHead();
    return issued.key;
  }
  async function costOf(path: string, key: string) {
    const before = remaining(await get('/v1/usage', key));
    const r = await get(path, key);
    return { r, cost: before - remaining(r) };
  }
  async function expectProblem(path: string, key: string, status: number, code: string) {
    const before = remaining(await get('/v1/usage', key));
    const r = await get(path, key);
    expect(r.status, `${path} status`).to.equal(status);
    expect(r.body.code, `${path} code`).to.equal(code);
    expect(remaining(r), `${path} charges nothing`).to.equal(before);
  }

  describe('GET /v1/divergence', () => {
    it('ranks the as-of cross-section by |gap| with exactly the spec fields and charges 3 per row', async () => {
      const key = await newKey('hobbyist');
      const { r, cost } = await costOf('/v1/divergence', key);
      expect(r.status).to.equal(200);
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'rows', 'why_now_included']);
      expect(r.body).to.include({ as_of: LIVE_AS_OF, count: 25, why_now_included: false, citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}` });
      expect(cost).to.equal(75);
      const expected = Object.entries(liveDiv)
        .sort(([ta, a], [tb, b]) => Math.abs(b[0]) - Math.abs(a[0]) || (ta < tb ? -1 : 1))
        .slice(0, 25);
      expect(r.body.rows.map((x: Row) => x.ticker as string)).to.deep.equal(expected.map(([t]) => t));
      const index = tickerIndex(live);
      for (const row of r.body.rows as Row[]) {
        expect(sortedKeys(row)).to.deep.equal(['company', 'days_at_extreme', 'gap', 'main_street', 'percentile', 'ticker', 'wall_street']);
        const i = index.get(row.ticker)!;
        const [ms, ws] = [scoreAt(live.main_street, i), scoreAt(live.wall_street, i)];
        expect(row).to.include({ main_street: ms, wall_street: ws });
        expect(row.gap).to.be.closeTo(ms - ws, 0.051);
        expect(row.percentile).to.be.within(0.95, 1); // the 25 widest of 500+ are all extremes
        expect(row.days_at_extreme).to.be.at.least(1);
        expect(row.company).to.be.a('string').and.not.be.empty;
      }
    });

    it('filters by direction in any case and refuses other directions with 400', async () => {
      const key = demoKey(server.dir, 'quant');
      const bull = await get('/v1/divergence?direction=BULL&limit=100', key);
      expect(bull.body.count).to.equal(100);
      expect(bull.body.rows.every((x: Row) => x.gap > 0)).to.equal(true);
      const bear = await get('/v1/divergence?direction=bear&limit=100', key);
      expect(bear.body.rows.every((x: Row) => x.gap < 0)).to.equal(true);
      const gaps = bear.body.rows.map((x: Row) => Math.abs(x.gap));
      expect(gaps).to.deep.equal([...gaps].sort((a, b) => b - a));
      await expectProblem('/v1/divergence?direction=sideways', key, 400, 'bad_request');
    });

    it('caps limit at 100 with 422', async () => {
      const key = await newKey('hobbyist');
      await expectProblem('/v1/divergence?limit=101', key, 422, 'limit_exceeded');
      await expectProblem('/v1/divergence?limit=abc', key, 400, 'bad_request');
      const { r, cost } = await costOf('/v1/divergence?limit=100', key);
      expect(r.body.count).to.equal(100);
      expect(cost).to.equal(300);
    });

    it('adds why_now built from the stock’s own numbers for builder and higher only', async () => {
      for (const tier of ['builder', 'quant', 'enterprise'] as const) {
        const r = await get('/v1/divergence?limit=5', demoKey(server.dir, tier));
        expect(r.body.why_now_included, tier).to.equal(true);
        for (const row of r.body.rows as Row[]) {
          expect(row.why_now).to.contain(row.ticker).and.contain(row.main_street.toFixed(1)).and.contain(row.wall_street.toFixed(1));
          expect(row.why_now).to.contain(`${row.days_at_extreme} trading day`);
          expect(row.why_now_headline).to.contain(row.ticker).and.contain(row.gap > 0 ? 'bull' : 'bear');
        }
        const texts = r.body.rows.map((x: Row) => x.why_now as string);
        expect(new Set(texts).size).to.equal(texts.length);
      }
      for (const tier of ['free', 'hobbyist'] as const) {
        const r = await get('/v1/divergence?limit=5', demoKey(server.dir, tier));
        expect(r.body.why_now_included, tier).to.equal(false);
        for (const row of r.body.rows as Row[]) expect(row).to.not.have.any.keys('why_now', 'why_now_headline');
      }
    });

    it('gives a free key its delayed as-of date and its top100 universe', async () => {
      const r = await get('/v1/divergence?limit=100', demoKey(server.dir, 'free'));
      expect(r.body.as_of).to.equal(FREE_AS_OF);
      expect(r.body.rows.every((x: Row) => top100.has(x.ticker))).to.equal(true);
      const cells = await cellsOn(FREE_AS_OF);
      for (const row of r.body.rows as Row[]) expect(row.gap).to.equal(cells[row.ticker]![0]);
    });
  });

  describe('GET /v1/divergence/events and /v1/divergence/open', () => {
    it('are quant and higher: 403 tier below, nothing charged', async () => {
      for (const tier of ['free', 'hobbyist', 'builder'] as const) {
        await expectProblem('/v1/divergence/events', demoKey(server.dir, tier), 403, 'tier');
        await expectProblem('/v1/divergence/open', demoKey(server.dir, tier), 403, 'tier');
      }
    });

    it('cost 10 and 500 credits per call', async () => {
      const key = await newKey('quant');
      const events = await costOf('/v1/divergence/events', key);
      expect(events.r.status).to.equal(200);
      expect(events.cost).to.equal(10);
      const open = await costOf('/v1/divergence/open', key);
      expect(open.r.status).to.equal(200);
      expect(open.cost).to.equal(500);
    });

    it('lists closed events of the last 365 days, newest flag first, with the spec fields', async () => {
      const r = await get('/v1/divergence/events', demoKey(server.dir, 'quant'));
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'events', 'since']);
      expect(r.body).to.include({ since: '2018-12-31', as_of: LIVE_AS_OF, citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}` });
      expect(r.body.count).to.equal(r.body.events.length).and.to.be.within(10, 2000);
      const flags = r.body.events.map((e: Row) => e.flag_date as string);
      expect(flags).to.deep.equal([...flags].sort().reverse());
      for (const e of r.body.events as Row[]) {
        expect(sortedKeys(e)).to.deep.equal(['close_date', 'days', 'direction', 'flag_date', 'pct_change', 'price_at_close', 'price_at_flag', 'ticker']);
        expect(e.direction).to.be.oneOf(['bull', 'bear']);
        expect(e.close_date > e.flag_date && e.close_date <= LIVE_AS_OF).to.equal(true);
        expect(e.days).to.equal(Math.round((Date.parse(e.close_date) - Date.parse(e.flag_date)) / DAY_MS));
      }
      const later = await get('/v1/divergence/events?since=2019-10-01', demoKey(server.dir, 'quant'));
      expect(later.body.events.every((e: Row) => e.flag_date >= '2019-10-01')).to.equal(true);
      expect(later.body.count).to.be.below(r.body.count);
      await expectProblem('/v1/divergence/events?since=2019-13-01', demoKey(server.dir, 'quant'), 400, 'bad_request');
      await expectProblem('/v1/divergence/events?since=yesterday', demoKey(server.dir, 'quant'), 400, 'bad_request');
    });

    it('lists the open extremes as of today, consistent with the day’s ranks', async () => {
      const r = await get('/v1/divergence/open', demoKey(server.dir, 'quant'));
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'open_trades']);
      expect(r.body.as_of).to.equal(LIVE_AS_OF);
      expect(r.body.count).to.be.above(0);
      for (const t of r.body.open_trades as Row[]) {
        expect(sortedKeys(t)).to.deep.equal([
          'current_gap',
          'current_percentile',
          'days_at_extreme',
          'days_open',
          'direction',
          'flag_date',
          'flag_gap',
          'price_at_flag',
          'ticker',
        ]);
        const cell = liveDiv[t.ticker]!;
        expect([t.current_gap, t.current_percentile, t.days_at_extreme, t.flag_date]).to.deep.equal([cell[0], cell[1], cell[2], cell[4]]);
        expect(t.days_open).to.be.within(0, 59);
        expect(t.current_percentile).to.be.at.least(0.5);
      }
      // Every ticker at an extreme today is in an open event.
      const extremes = Object.entries(liveDiv).filter(([, c]) => c[2] > 0).map(([t]) => t);
      const open = new Set(r.body.open_trades.map((t: Row) => t.ticker as string));
      for (const t of extremes) expect(open.has(t), t).to.equal(true);
    });
  });

  describe('GET /v1/track-record', () => {
    it('is free for every tier', async () => {
      const key = await newKey('free');
      const { r, cost } = await costOf('/v1/track-record', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(0);
      expect(r.body).to.include({ as_of: FREE_AS_OF, citation_url: `${BASE}/docs?as_of=${FREE_AS_OF}` });
      expect(r.body.trades.every((t: Row) => t.exit_date <= FREE_AS_OF)).to.equal(true);
    });

    it('recomputes exactly from the events and the close prices', async () => {
      const key = demoKey(server.dir, 'quant');
      const record = (await get('/v1/track-record', key)).body;
      const events = (await get('/v1/divergence/events?since=2018-01-01', key)).body.events as Row[];
      expect(events.length).to.be.below(2000);
      const reads = server.services.reads;
      const closeOn = async (ticker: string, date: string) => {
        const buckets = (await reads.find(prices, { ticker, year: { $lte: date.slice(0, 4) } })).items;
        const series = seriesBetween(buckets, undefined, date);
        return series[series.length - 1]!.value;
      };
      const trades = [];
      for (const e of events) {
        const entry = await closeOn(e.ticker, e.flag_date);
        const exit = await closeOn(e.ticker, e.close_date);
        expect([e.price_at_flag, e.price_at_close]).to.deep.equal([entry, exit]);
        const pct = round2((exit / entry - 1) * 100);
        expect(e.pct_change).to.equal(pct);
        const ret = e.direction === 'bull' ? pct : -pct || 0;
        trades.push({
          ticker: e.ticker,
          direction: e.direction === 'bull' ? 'long' : 'short',
          entry_date: e.flag_date,
          exit_date: e.close_date,
          entry_price: entry,
          exit_price: exit,
          return_pct: ret,
          days_held: Math.round((Date.parse(e.close_date) - Date.parse(e.flag_date)) / DAY_MS),
          win: ret > 0,
        });
      }
      const key2 = (t: Row) => `${t.exit_date}|${t.ticker}|${t.entry_date}`;
      const sortTrades = (ts: Row[]) => [...ts].sort((a, b) => (key2(a) < key2(b) ? -1 : 1));
      expect(sortTrades(record.trades)).to.deep.equal(sortTrades(trades));
      const returns = trades.map((t) => t.return_pct).sort((a, b) => a - b);
      const n = returns.length;
      const median = n % 2 ? returns[(n - 1) / 2]! : (returns[n / 2 - 1]! + returns[n / 2]!) / 2;
      expect(record).to.include({
        closed_trades: n,
        win_rate: Math.round((trades.filter((t) => t.win).length / n) * 10_000) / 10_000,
        avg_return_pct: round2(returns.reduce((s, x) => s + x, 0) / n),
        median_return_pct: round2(median),
        avg_days_held: Math.round((trades.reduce((s, t) => s + t.days_held, 0) / n) * 10) / 10,
        best_return_pct: returns[n - 1],
        worst_return_pct: returns[0],
        as_of: LIVE_AS_OF,
      });
    });

    it('is a plausible record on the demo data', async () => {
      const record = (await get('/v1/track-record', demoKey(server.dir, 'hobbyist'))).body;
      process.stdout.write(
        `      demo track record: ${record.closed_trades} trades, win rate ${record.win_rate}, avg ${record.avg_return_pct}%, median ${record.median_return_pct}%, ${record.avg_days_held} days\n`,
      );
      expect(record.closed_trades).to.be.within(10, 2000);
      expect(record.win_rate).to.be.greaterThan(0).and.lessThan(1);
      expect(record.avg_days_held).to.be.within(1, 90);
      expect(record.best_return_pct).to.be.below(200);
      expect(record.worst_return_pct).to.be.above(-200);
      expect(new Set(record.trades.map((t: Row) => t.direction as string))).to.deep.equal(new Set(['long', 'short']));
    });
  });

  describe('When every read model is rebuilt from the log', () => {
    it('gives the same divergence days, events and score moves as the live run', async () => {
      const reads = server.services.reads;
      const dump = async () => {
        const out: unknown[][] = [];
        for (const def of [divergenceDays, divergenceDates, divergenceEvents, scoreMoves] as const) {
          const docs: unknown[] = [];
          for await (const d of reads.scan(def as typeof divergenceEvents)) docs.push(d);
          out.push(docs);
        }
        return out;
      };
      const before = await dump();
      expect(before[2]!.length).to.be.above(100);
      // (The 2019 demo has no day-over-day service_score move of 10 or more; the unit test covers moves.)
      await server.services.runner.replay();
      expect(await dump()).to.deep.equal(before);
    });
  });
});
