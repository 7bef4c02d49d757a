import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { crossSection } from '../../projections/daily-scores/daily-scores.projection.js';
import { dailyScores, type DailyScores } from '../../projections/shared/daily-scores.js';
import { earnings, signals, themes, tickers } from '../../projections/reference/reference.projection.js';
import { scoreVersions } from '../../projections/score-history/score-history.projection.js';
import { tradingDaysBetween } from '../../src/domain/trading-calendar.js';
import type { Tier } from '../../src/domain/plans.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

// At 12:00 UTC on Friday 2019-06-14 the day's scores (22:00) are not out yet: live keys see
// Thursday 2019-06-13. Free keys trail 7 days: the latest score date on or before 2019-06-07.
const NOW = '2019-06-14T12:00:00Z';
const BASE = 'https://api.example.test';
const LIVE_AS_OF = '2019-06-13';
const FREE_AS_OF = '2019-06-07';

type Row = Record<string, any>;
const sortedKeys = (o: object) => Object.keys(o).sort();
const byTicker = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe('Discovery and account endpoints over HTTP', function () {
  this.timeout(120_000);
  let server: TestServer;
  let top100: Set<string>;
  /** The live and the delayed cross-section: ticker → [main_street, wall_street, service_score]. */
  let live: Record<string, [number, number, number]>;
  let delayed: Record<string, [number, number, number]>;
  const valuesOf = (day: DailyScores | null) =>
    day && Object.fromEntries(crossSection(day).map((r) => [r.ticker, [r.main_street, r.wall_street, r.service_score] as [number, number, number]]));

  before(async () => {
    server = await startTestServer({ now: NOW, env: { PUBLIC_BASE_URL: BASE } });
    const reads = server.services.reads;
    top100 = new Set((await reads.find(tickers, { size_rank: { $lte: 100 } })).items.map((t) => t.symbol));
    live = valuesOf(await reads.get(dailyScores, LIVE_AS_OF))!;
    delayed = valuesOf(await reads.get(dailyScores, FREE_AS_OF))!;
    expect(live, 'live cross-section').to.not.equal(null);
    expect(delayed, 'delayed cross-section').to.not.equal(null);
    expect(await reads.count(dailyScores, { date: { $gt: LIVE_AS_OF } })).to.equal(0);
  });
  after(() => server.stop());

  const get = (path: string, key?: string) => getJson(`${server.url}${path}`, key);
  async function newAccount(tier: Tier, pro = false) {
    const issued = await createAccountWithKey(server.services, { tier, pro, email: `${tier}@example.test` });
    await server.services.runner.waitForHead();
    return issued;
  }
  const newKey = async (tier: Tier, pro = false) => (await newAccount(tier, pro)).key;
  const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));

  /** Calls `path` and reports what it cost from the balance before and after. */
  async function costOf(path: string, key: string) {
    const before = remaining(await get('/v1/usage', key));
    const r = await get(path, key);
    return { r, cost: before - remaining(r) };
  }

  async function expectProblem(path: string, key: string | undefined, status: number, code: string, param?: string) {
    const before = key ? remaining(await get('/v1/usage', key)) : 0;
    const r = await get(path, key);
    expect(r.status, `${path} status`).to.equal(status);
    expect(r.type).to.match(/application\/problem\+json/);
    expect(r.body.code, `${path} code`).to.equal(code);
    if (param) expect(r.body.detail).to.contain(param);
    if (key && status !== 401) expect(remaining(r), `${path} charges nothing`).to.equal(before);
    return r;
  }

  describe('Every discovery endpoint', () => {
    it('refuses a missing key with 401 and an unknown one with 401', async () => {
      for (const path of ['/v1/screener', '/v1/signals', '/v1/themes', '/v1/themes/semiconductors', '/v1/coverage', '/v1/earnings', '/v1/meta']) {
        await expectProblem(path, undefined, 401, 'unauthorized');
        await expectProblem(path, 'sk_live_nope', 401, 'unauthorized');
        // Paced under the limit on requests without a valid key from one address (rate-limits.test.ts tests it).
        await new Promise((r) => setTimeout(r, 400));
      }
    });
  });

  describe('GET /v1/screener', () => {
    it('ranks the live cross-section by service_score with exactly the spec fields', async () => {
      const { status, body } = await get('/v1/screener', demoKey(server.dir, 'hobbyist'));
      expect(status).to.equal(200);
      expect(sortedKeys(body)).to.deep.equal(['as_of', 'citation_url', 'count', 'rows', 'source']);
      expect(body).to.include({ as_of: LIVE_AS_OF, count: 100, citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}` });
      expect(body.source).to.be.a('string').and.not.empty;
      expect(body.rows).to.have.length(100);
      for (const row of body.rows as Row[]) {
        expect(sortedKeys(row)).to.deep.equal(['date', 'divergence_gap', 'main_street', 'service_score', 'ticker', 'wall_street']);
        const [ms, ws, ss] = live[row.ticker]!;
        expect(row).to.include({ date: LIVE_AS_OF, main_street: ms, wall_street: ws, service_score: ss });
        expect(row.divergence_gap).to.be.closeTo(ms - ws, 0.051);
      }
      const expected = Object.entries(live)
        .map(([ticker, v]) => ({ ticker, ss: v[2] }))
        .sort((a, b) => b.ss - a.ss || byTicker(a.ticker, b.ticker))
        .slice(0, 100)
        .map((r) => r.ticker);
      expect(body.rows.map((r: Row) => r.ticker as string)).to.deep.equal(expected);
    });

    it('returns the whole universe at limit=650 and filters on min_score', async () => {
      const key = demoKey(server.dir, 'quant');
      const all = await get('/v1/screener?limit=650', key);
      expect(all.body.count).to.equal(Object.keys(live).length);
      const scores = all.body.rows.map((r: Row) => r.service_score as number);
      expect(scores).to.deep.equal([...scores].sort((a, b) => b - a));
      const filtered = await get('/v1/screener?limit=650&min_score=60', key);
      expect(filtered.body.count).to.equal(scores.filter((s: number) => s >= 60).length).and.to.be.above(0);
      expect(filtered.body.rows.every((r: Row) => r.service_score >= 60)).to.equal(true);
    });

    it('charges 2 credits per row returned, and nothing for an empty answer', async () => {
      const key = await newKey('hobbyist');
      const five = await costOf('/v1/screener?limit=5', key);
      expect(five.r.body.count).to.equal(5);
      expect(five.cost).to.equal(10);
      const none = await costOf('/v1/screener?min_score=100', key);
      expect(none.r.status).to.equal(200);
      expect(none.r.body).to.include({ count: 0 });
      expect(none.cost).to.equal(0);
    });

    it('gives a free key the top100 universe as of 7 days ago, and counts after filtering', async () => {
      const key = await newKey('free');
      const { r, cost } = await costOf('/v1/screener?limit=650', key);
      expect(r.status).to.equal(200);
      expect(r.body.as_of).to.equal(FREE_AS_OF);
      const inTop = Object.keys(delayed).filter((t) => top100.has(t));
      expect(r.body.count).to.equal(inTop.length).and.to.equal(r.body.rows.length);
      expect(r.body.count).to.be.at.most(100);
      for (const row of r.body.rows as Row[]) {
        expect(top100.has(row.ticker), row.ticker).to.equal(true);
        expect(row.date).to.equal(FREE_AS_OF);
        expect(row.service_score).to.equal(delayed[row.ticker]![2]);
      }
      expect(cost).to.equal(2 * r.body.count);
    });

    it('gives a free key with the Pro overlay live data over the whole universe', async () => {
      const key = await newKey('free', true);
      const r = await get('/v1/screener?limit=650', key);
      expect(r.body.as_of).to.equal(LIVE_AS_OF);
      expect(r.body.count).to.equal(Object.keys(live).length);
    });

    it('refuses a call its credits do not cover with 429 and no data, after checking the parameters', async () => {
      const { key, account_id } = await newAccount('free');
      await server.services.ledger.debit(account_id, { request_id: 'setup', endpoint: 'history', channel: 'rest', cost: 995 });
      await expectProblem('/v1/screener?limit=abc', key, 400, 'bad_request', 'limit');
      await expectProblem('/v1/screener?limit=651', key, 422, 'limit_exceeded', 'limit');
      const refused = await expectProblem('/v1/screener?limit=3', key, 429, 'credits_exhausted');
      expect(refused.body).to.not.have.property('rows');
      expect(remaining(refused)).to.equal(5);
      const ok = await costOf('/v1/screener?limit=2', key);
      expect(ok.r.status).to.equal(200);
      expect(ok.cost).to.equal(4);
      // Coverage and meta are free: they keep working with 1 credit left.
      expect((await get('/v1/coverage', key)).status).to.equal(200);
      expect((await get('/v1/meta', key)).status).to.equal(200);
      await expectProblem('/v1/themes', key, 429, 'credits_exhausted');
    });

    it('answers a limit above 650 with 422 and malformed values with 400 naming the parameter', async () => {
      const key = await newKey('hobbyist');
      await expectProblem('/v1/screener?limit=651', key, 422, 'limit_exceeded', 'limit');
      for (const bad of ['abc', '1.5', '0', '-3', '1e2']) await expectProblem(`/v1/screener?limit=${bad}`, key, 400, 'bad_request', 'limit');
      for (const bad of ['abc', '2.5', '101', '-1']) await expectProblem(`/v1/screener?min_score=${bad}`, key, 400, 'bad_request', 'min_score');
    });
  });

  describe('GET /v1/signals', () => {
    it('lists the newest signals first with exactly the spec fields, 2 credits a call', async () => {
      const key = await newKey('hobbyist');
      const { r, cost } = await costOf('/v1/signals?limit=3', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(2);
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'signals']);
      expect(r.body).to.include({ count: 3, as_of: LIVE_AS_OF, citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}` });
      const all = (await server.services.reads.find(signals, {}, { sort: [['created_at', -1]] })).items;
      expect(r.body.signals.map((s: Row) => s.id as number)).to.deep.equal(all.slice(0, 3).map((s) => s.id));
      for (const s of r.body.signals as Row[]) {
        expect(sortedKeys(s)).to.deep.equal(['alert_type', 'content', 'created_at', 'id', 'themes', 'tickers']);
        expect(s.id).to.be.a('number');
        expect(s.created_at).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
        expect(s.tickers).to.be.an('array');
        expect(s.themes).to.be.an('array');
        expect(s.content).to.be.a('string').and.not.empty;
      }
    });

    it('returns 50 by default, newest first', async () => {
      const r = await get('/v1/signals', demoKey(server.dir, 'quant'));
      const total = await server.services.reads.count(signals, {});
      expect(total).to.be.above(50);
      expect(r.body.count).to.equal(50);
      const times = r.body.signals.map((s: Row) => s.created_at as string);
      expect(times).to.deep.equal([...times].sort().reverse());
    });

    it('delays signals for a free key and hides those about stocks outside top100', async () => {
      const key = await newKey('free');
      const r = await get('/v1/signals?limit=200', key);
      expect(r.body.as_of).to.equal(FREE_AS_OF);
      const expected = (await server.services.reads.find(signals, { created_at: { $lte: `${FREE_AS_OF}T23:59:59.999Z` } }, { sort: [['created_at', -1]] })).items
        .filter((s) => s.tickers.every((t) => top100.has(t)))
        .map((s) => s.id);
      expect(r.body.signals.map((s: Row) => s.id as number)).to.deep.equal(expected);
      expect(r.body.count).to.equal(expected.length).and.to.be.above(0);
      for (const s of r.body.signals as Row[]) expect(s.created_at <= `${FREE_AS_OF} 23:59:59`).to.equal(true);
      // A live key sees later signals the free key does not.
      const liveNewest = (await get('/v1/signals?limit=1', demoKey(server.dir, 'hobbyist'))).body.signals[0].created_at as string;
      expect(liveNewest > `${FREE_AS_OF} 23:59:59`).to.equal(true);
    });

    it('answers limit 201 with 422 and malformed limits with 400', async () => {
      const key = await newKey('hobbyist');
      await expectProblem('/v1/signals?limit=201', key, 422, 'limit_exceeded', 'limit');
      await expectProblem('/v1/signals?limit=abc', key, 400, 'bad_request', 'limit');
      await expectProblem('/v1/signals?limit=1.5', key, 400, 'bad_request', 'limit');
      expect((await get('/v1/signals?limit=200', key)).status).to.equal(200);
    });
  });

  describe('GET /v1/themes', () => {
    it('lists every theme with aggregates of its constituents on the as-of date, 2 credits', async () => {
      const key = await newKey('hobbyist');
      const { r, cost } = await costOf('/v1/themes', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(2);
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'themes']);
      const docs = (await server.services.reads.find(themes, {})).items;
      expect(r.body).to.include({ count: docs.length, as_of: LIVE_AS_OF });
      const strengths = r.body.themes.map((t: Row) => t.strength as number);
      expect(strengths).to.deep.equal([...strengths].sort((a, b) => b - a));
      for (const t of r.body.themes as Row[]) {
        expect(sortedKeys(t)).to.deep.equal(
          ['avg_main_street', 'avg_service_score', 'avg_wall_street', 'description', 'name', 'scored_count', 'slug', 'stock_count', 'strength', 'tickers'],
        );
        const doc = docs.find((d) => d.slug === t.slug)!;
        const members = [...new Set(doc.constituents.map((c) => c.ticker))];
        expect(t.tickers).to.deep.equal(members);
        expect(t.stock_count).to.equal(members.length);
        const scored = members.filter((m) => live[m]);
        expect(t.scored_count).to.equal(scored.length);
        const avg = (i: 0 | 1 | 2) => Math.round((scored.reduce((s, m) => s + live[m]![i], 0) / scored.length) * 10) / 10;
        expect(t).to.include({ avg_main_street: avg(0), avg_wall_street: avg(1), avg_service_score: avg(2) });
      }
    });

    it('leaves constituents outside top100 out of a free key’s tickers and counts, with delayed averages', async () => {
      const key = await newKey('free');
      const free = await get('/v1/themes', key);
      const paid = await get('/v1/themes', demoKey(server.dir, 'hobbyist'));
      expect(free.body.as_of).to.equal(FREE_AS_OF);
      let narrower = 0;
      for (const t of free.body.themes as Row[]) {
        const full = (paid.body.themes as Row[]).find((p) => p.slug === t.slug)!;
        expect(t.tickers).to.deep.equal(full.tickers.filter((x: string) => top100.has(x)));
        expect(t.stock_count).to.equal(t.tickers.length);
        if (t.stock_count < full.stock_count) narrower += 1;
        const scored = (t.tickers as string[]).filter((m) => delayed[m]);
        expect(t.scored_count).to.equal(scored.length);
        if (scored.length === 0) expect(t.avg_service_score).to.equal(null);
        else expect(t.avg_service_score).to.equal(Math.round((scored.reduce((s, m) => s + delayed[m]![2], 0) / scored.length) * 10) / 10);
      }
      expect(narrower).to.be.above(0);
    });
  });

  describe('GET /v1/themes/{slug}', () => {
    it('returns the theme fields and each constituent’s scores, 1 credit per constituent', async () => {
      const key = await newKey('hobbyist');
      const { r, cost } = await costOf('/v1/themes/semiconductors', key);
      expect(r.status).to.equal(200);
      expect(sortedKeys(r.body)).to.deep.equal(
        ['as_of', 'avg_main_street', 'avg_service_score', 'avg_wall_street', 'citation_url', 'constituents', 'name', 'scored_count', 'slug', 'stock_count', 'strength'],
      );
      const doc = (await server.services.reads.get(themes, 'semiconductors'))!;
      expect(r.body).to.include({ slug: 'semiconductors', name: doc.name, strength: doc.strength, as_of: LIVE_AS_OF });
      expect(r.body.constituents).to.have.length(doc.constituents.length);
      expect(r.body.stock_count).to.equal(doc.constituents.length);
      expect(cost).to.equal(r.body.constituents.length);
      for (const c of r.body.constituents as Row[]) {
        expect(sortedKeys(c)).to.deep.equal(['date', 'divergence_gap', 'main_street', 'relationship', 'service_score', 'ticker', 'wall_street']);
        expect(c.relationship).to.equal(doc.constituents.find((d) => d.ticker === c.ticker)!.relationship);
        expect(c).to.include({ date: LIVE_AS_OF, service_score: live[c.ticker]![2] });
      }
      const ss = r.body.constituents.map((c: Row) => c.service_score as number);
      expect(ss).to.deep.equal([...ss].sort((a, b) => b - a));
      const listed = (await get('/v1/themes', key)).body.themes.find((t: Row) => t.slug === 'semiconductors');
      expect(r.body).to.include({
        stock_count: listed.stock_count,
        scored_count: listed.scored_count,
        avg_main_street: listed.avg_main_street,
        avg_wall_street: listed.avg_wall_street,
        avg_service_score: listed.avg_service_score,
      });
    });

    it('treats the slug case-insensitively', async () => {
      const r = await get('/v1/themes/Semiconductors', demoKey(server.dir, 'quant'));
      expect(r.status).to.equal(200);
      expect(r.body.slug).to.equal('semiconductors');
    });

    it('shows a free key only its top100 constituents and charges only for those', async () => {
      const key = await newKey('free');
      const { r, cost } = await costOf('/v1/themes/semiconductors', key);
      expect(r.status).to.equal(200);
      expect(r.body.as_of).to.equal(FREE_AS_OF);
      const doc = (await server.services.reads.get(themes, 'semiconductors'))!;
      const visible = doc.constituents.map((c) => c.ticker).filter((t) => top100.has(t));
      expect(visible.length).to.be.below(doc.constituents.length);
      expect(r.body.constituents.map((c: Row) => c.ticker as string).sort()).to.deep.equal([...visible].sort());
      expect(r.body.stock_count).to.equal(visible.length);
      expect(cost).to.equal(visible.length);
      for (const c of r.body.constituents as Row[]) expect(c.date).to.equal(FREE_AS_OF);
    });

    it('answers an unknown slug with 404 and a malformed one with 400, charging nothing', async () => {
      const key = await newKey('hobbyist');
      await expectProblem('/v1/themes/no-such-theme', key, 404, 'not_found');
      await expectProblem('/v1/themes/bad_slug!', key, 400, 'bad_request', 'slug');
    });
  });

  describe('GET /v1/coverage', () => {
    it('lists every scored ticker, sorted, for a full-coverage key, free of charge', async () => {
      const key = await newKey('hobbyist');
      const { r, cost } = await costOf('/v1/coverage', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(0);
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'coverage', 'since', 'tickers']);
      const all = Object.keys(live).sort(byTicker);
      expect(r.body).to.deep.equal({
        tickers: all,
        count: all.length,
        coverage: 'all',
        since: null,
        as_of: LIVE_AS_OF,
        citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}`,
      });
    });

    it('lists a free key’s top100 tickers', async () => {
      const key = await newKey('free');
      const { r, cost } = await costOf('/v1/coverage', key);
      expect(cost).to.equal(0);
      expect(r.body.coverage).to.equal('top100');
      expect(r.body.as_of).to.equal(FREE_AS_OF);
      expect(r.body.tickers).to.deep.equal(Object.keys(delayed).filter((t) => top100.has(t)).sort(byTicker));
      expect(r.body.count).to.equal(r.body.tickers.length).and.to.equal(100);
    });

    it('filters on since, capped at the caller’s as-of date, and echoes it', async () => {
      const paid = await get('/v1/coverage?since=2019-06-10', demoKey(server.dir, 'hobbyist'));
      expect(paid.body).to.include({ since: '2019-06-10', count: Object.keys(live).length });
      const free = demoKey(server.dir, 'free');
      const early = await get(`/v1/coverage?since=${FREE_AS_OF}`, free);
      expect(early.body).to.include({ since: FREE_AS_OF, count: 100 });
      // Scores after the free as-of date exist but are not visible to it yet.
      const late = await get('/v1/coverage?since=2019-06-10', free);
      expect(late.body).to.deep.equal({
        tickers: [],
        count: 0,
        coverage: 'top100',
        since: '2019-06-10',
        as_of: FREE_AS_OF,
        citation_url: `${BASE}/docs?as_of=${FREE_AS_OF}`,
      });
      const future = await get('/v1/coverage?since=2030-01-01', demoKey(server.dir, 'quant'));
      expect(future.body.count).to.equal(0);
    });

    it('refuses a malformed since with 400', async () => {
      const key = await newKey('hobbyist');
      await expectProblem('/v1/coverage?since=2019-02-30', key, 400, 'bad_request', 'since');
      await expectProblem('/v1/coverage?since=yesterday', key, 400, 'bad_request', 'since');
    });
  });

  describe('GET /v1/earnings', () => {
    it('is refused with 403 tier below builder, before the parameters are checked', async () => {
      for (const tier of ['free', 'hobbyist'] as const) {
        const key = await newKey(tier);
        const r = await expectProblem('/v1/earnings', key, 403, 'tier');
        expect(r.body.required_tier).to.equal('builder');
        await expectProblem('/v1/earnings?days=61', key, 403, 'tier');
      }
      // The Pro overlay improves data entitlements, never the tier.
      await expectProblem('/v1/earnings', await newKey('hobbyist', true), 403, 'tier');
    });

    it('lists reporters of the next 14 days by date then ticker for builder, 100 credits', async () => {
      const key = await newKey('builder');
      const { r, cost } = await costOf('/v1/earnings', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(100);
      expect(sortedKeys(r.body)).to.deep.equal(['as_of', 'citation_url', 'count', 'reporters']);
      expect(r.body).to.include({ as_of: LIVE_AS_OF, citation_url: `${BASE}/docs?as_of=${LIVE_AS_OF}` });
      const expected = (await server.services.reads.find(earnings, { date: { $gte: '2019-06-14', $lte: '2019-06-28' } })).items;
      const expectedTickers = [...new Set(expected.map((e) => e.ticker))];
      expect(r.body.count).to.equal(expectedTickers.length).and.to.equal(r.body.reporters.length).and.to.be.above(0);
      const names = await server.services.reads.getMany(tickers, expectedTickers);
      const keys = r.body.reporters.map((x: Row) => `${x.next_earnings_date} ${x.ticker}`);
      expect(keys).to.deep.equal([...keys].sort());
      for (const x of r.body.reporters as Row[]) {
        expect(sortedKeys(x)).to.deep.equal(['main_street', 'name', 'next_earnings_date', 'service_score', 'ticker', 'wall_street']);
        expect(x.next_earnings_date >= '2019-06-14' && x.next_earnings_date <= '2019-06-28').to.equal(true);
        expect(x.name).to.equal(names.get(x.ticker)!.company);
        const [ms, ws, ss] = live[x.ticker]!;
        expect(x).to.include({ main_street: ms, wall_street: ws, service_score: ss });
      }
    });

    it('widens with days up to 60 and answers 61 with 422, malformed days with 400', async () => {
      const key = await newKey('builder');
      const d14 = await get('/v1/earnings', key);
      const d60 = await get('/v1/earnings?days=60', key);
      expect(d60.status).to.equal(200);
      expect(d60.body.count).to.be.above(d14.body.count);
      expect(d60.body.reporters.every((x: Row) => x.next_earnings_date <= '2019-08-13')).to.equal(true);
      await expectProblem('/v1/earnings?days=61', key, 422, 'limit_exceeded', 'days');
      await expectProblem('/v1/earnings?days=abc', key, 400, 'bad_request', 'days');
      await expectProblem('/v1/earnings?days=1.5', key, 400, 'bad_request', 'days');
    });
  });

  describe('GET /v1/meta', () => {
    it('describes the dataset with exactly the spec fields, no as_of, free of charge', async () => {
      const key = await newKey('free');
      const { r, cost } = await costOf('/v1/meta', key);
      expect(r.status).to.equal(200);
      expect(cost).to.equal(0);
      expect(sortedKeys(r.body)).to.deep.equal(['coverage', 'dataset', 'docs', 'fields', 'history', 'license', 'mcp']);
      expect(r.body).to.include({ license: `${BASE}/license`, docs: `${BASE}/docs`, mcp: `${BASE}/mcp/http` });
      const universe = await server.services.reads.count(tickers, {});
      expect(r.body.coverage).to.contain(String(universe)).and.to.contain('top100');
      expect(r.body.dataset).to.be.a('string').and.not.empty;
    });

    it('reports the depth of the history and point-in-time vintage statistics from the read models', async () => {
      const { body } = await get('/v1/meta', demoKey(server.dir, 'quant'));
      expect(sortedKeys(body.history)).to.deep.equal(['depth', 'restatement_policy', 'vintages']);
      const days = tradingDaysBetween('2019-01-02', LIVE_AS_OF);
      let rows = 0;
      for await (const d of server.services.reads.scan(dailyScores)) rows += d.tickers.length;
      expect(body.history.depth).to.deep.equal({ first_date: '2019-01-02', last_date: LIVE_AS_OF, trading_days: days.length, rows });
      const versions = (await server.services.reads.find(scoreVersions, {})).items;
      const restated = new Set(versions.map((v) => `${v.ticker}|${v.date}`));
      expect(restated.size).to.be.above(0);
      const v = body.history.vintages;
      expect(v).to.include({ rows_restated: restated.size, restatements: versions.length });
      expect(v.share_restated).to.be.closeTo(restated.size / rows, 0.0001);
      // The demo restates 1-5 days (24-120 h) after publication.
      expect(v.median_restatement_lag_hours).to.be.within(24, 120);
      expect(v.max_restatement_lag_hours).to.be.within(v.median_restatement_lag_hours, 120);
      expect(v.max_versions_per_row).to.be.at.least(2);
      expect(v.last_restated_at).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      expect(body.history.restatement_policy).to.contain('restated_at');
    });

    it('defines every field any endpoint of the OpenAPI document returns', async () => {
      const { body: meta } = await get('/v1/meta', demoKey(server.dir, 'quant'));
      const { body: openapi } = await get('/openapi.json');
      const names = new Set<string>();
      for (const schema of Object.values<Row>(openapi.components.schemas)) for (const p of Object.keys(schema.properties ?? {})) names.add(p);
      expect([...names].filter((n) => !(n in meta.fields))).to.deep.equal([]);
      for (const name of ['main_street', 'wall_street', 'service_score', 'divergence_gap', 'estimated', 'restated_at', 'as_of', 'citation_url', 'source', 'percentile', 'days_at_extreme', 'gap', 'why_now']) {
        expect(meta.fields[name], name).to.have.all.keys('type', 'description');
      }
    });

    it('lists every error code of the OpenAPI document under the field code', async () => {
      const { body: meta } = await get('/v1/meta', demoKey(server.dir, 'quant'));
      const { body: openapi } = await get('/openapi.json');
      // One problem schema per code; ProblemDetails, their union, maps each code to its schema.
      const codes = Object.keys(openapi.components.schemas.ProblemDetails.discriminator.mapping as Record<string, string>);
      expect(codes.length).to.be.at.least(17);
      const listed = /one of: ([a-z_, ]+)\.$/.exec(meta.fields.code.description)![1]!.split(', ');
      expect(listed).to.have.members(codes);
    });
  });
});
