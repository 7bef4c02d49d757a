import { expect } from 'chai';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import type { Tier } from '../../src/domain/plans.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

// At 12:00 UTC on Friday 2019-06-14 live keys see Thursday 2019-06-13; free keys trail 7 days:
// the latest score date on or before 2019-06-07.
const NOW = '2019-06-14T12:00:00Z';
const LIVE_AS_OF = '2019-06-13';
const FREE_AS_OF = '2019-06-07';
const SLUG = 'late-movers';

type Row = Record<string, any>;

/**
 * A theme whose constituents' latest scores are not all on the as-of date:
 * - LATEX: scored once, on 2019-06-05 (late / delisted): every key sees that row;
 * - HALTX: scored 2019-06-04 and 2019-06-11, then halted: live keys see 06-11, free keys 06-04;
 * - GAPX: scored 2019-06-06 and 2019-06-13 but not on 2019-06-07: free keys see 06-06;
 * - NEWX: first scored 2019-06-12: live keys see it, free keys see it unscored;
 * - NONEX: listed, never scored: unscored for everyone;
 * - AAPL: a demo ticker scored every trading day.
 * All are in `top100` (size_rank ≤ 100), so a free key sees every constituent.
 */
const INGEST = [
  { type: 'ticker', symbol: 'LATEX', company: 'Late Co', sector: 'Industrials', size_rank: 1 },
  { type: 'ticker', symbol: 'HALTX', company: 'Halted Co', sector: 'Industrials', size_rank: 2 },
  { type: 'ticker', symbol: 'GAPX', company: 'Gap Co', sector: 'Industrials', size_rank: 3 },
  { type: 'ticker', symbol: 'NEWX', company: 'New Co', sector: 'Industrials', size_rank: 4 },
  { type: 'ticker', symbol: 'NONEX', company: 'Never Scored Co', sector: 'Industrials', size_rank: 5 },
  score('LATEX', '2019-06-05', 80, 40),
  score('HALTX', '2019-06-04', 30, 60),
  score('HALTX', '2019-06-11', 70, 20),
  score('GAPX', '2019-06-06', 55, 45),
  score('GAPX', '2019-06-13', 65, 35),
  score('NEWX', '2019-06-12', 90, 10),
  {
    type: 'theme',
    slug: SLUG,
    name: 'Late movers',
    description: 'Constituents whose latest score is older than the as-of date.',
    strength: 50,
    constituents: [
      { ticker: 'LATEX', relationship: 'core' },
      { ticker: 'HALTX', relationship: 'supplier' },
      { ticker: 'GAPX', relationship: 'beneficiary' },
      { ticker: 'NEWX', relationship: 'adjacent' },
      { ticker: 'NONEX', relationship: 'headwind' },
      { ticker: 'AAPL', relationship: 'core' },
    ],
  },
];

function score(ticker: string, date: string, main_street: number, wall_street: number) {
  return { type: 'score', ticker, date, main_street, wall_street, published_at: `${date}T22:00:00Z` };
}

const mean1 = (xs: number[]) => (xs.length ? Math.round((xs.reduce((s, x) => s + x, 0) / xs.length) * 10) / 10 : null);

describe('Themes use each constituent’s latest score on or before as_of', function () {
  this.timeout(120_000);
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ now: NOW });
    const rows = parseIngestFile(INGEST.map((r) => JSON.stringify(r)).join('\n'), 'jsonl');
    await ingestRows(server.services.events, server.services.clock, rows);
    await server.services.runner.waitForHead();
  });
  after(() => server.stop());

  const get = (path: string, key: string) => getJson(`${server.url}${path}`, key);
  const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));
  async function newKey(tier: Tier) {
    const issued = await createAccountWithKey(server.services, { tier, pro: false, email: `${tier}-themes@example.test` });
    // The test walks every theme in a row, faster than a free key's request rate: lifted here.
    await setRateLimit(server.services, issued.account_id, 'unlimited');
    await server.services.runner.waitForHead();
    return issued.key;
  }

  /** What GET /v1/scores/{ticker} shows the key for each ticker (null for a 404: nothing on or before as_of). */
  async function scoresOf(key: string, list: string[]): Promise<Map<string, Row | null>> {
    const out = new Map<string, Row | null>();
    for (const t of list) {
      const r = await get(`/v1/scores/${t}`, key);
      expect([200, 404], `GET /v1/scores/${t}`).to.include(r.status);
      out.set(t, r.status === 200 ? r.body : null);
    }
    return out;
  }

  /** Checks the detail and the list item of the theme for one key against GET /v1/scores/{ticker}. */
  async function check(tier: Tier, asOf: string, expected: Record<string, [date: string, ms: number, ws: number] | null>) {
    const key = await newKey(tier);
    const before = remaining(await get('/v1/usage', key));
    const detail = await get(`/v1/themes/${SLUG}`, key);
    expect(detail.status).to.equal(200);
    expect(detail.body.as_of).to.equal(asOf);
    const tickers = Object.keys(expected);
    // Billing is unchanged: 1 credit per constituent returned, scored or not.
    expect(detail.body.constituents).to.have.length(tickers.length);
    expect(before - remaining(detail), 'credits charged').to.equal(tickers.length);

    const scores = await scoresOf(key, tickers);
    const byTicker = new Map((detail.body.constituents as Row[]).map((c) => [c.ticker as string, c]));
    for (const [ticker, want] of Object.entries(expected)) {
      const c = byTicker.get(ticker)!;
      expect(c, ticker).to.not.equal(undefined);
      const s = scores.get(ticker)!;
      if (want === null) {
        expect(s, `${ticker}: GET /v1/scores has nothing on or before as_of`).to.equal(null);
        expect(c, ticker).to.include({ date: null, main_street: null, wall_street: null, service_score: null, divergence_gap: null });
        continue;
      }
      const [date, ms, ws] = want;
      if (ticker !== 'AAPL') expect(c, ticker).to.include({ date, main_street: ms, wall_street: ws, divergence_gap: ms - ws });
      expect(c.date !== null && c.date <= asOf, `${ticker}: date ${c.date} should be on or before as_of ${asOf}`).to.equal(true);
      // The same row as GET /v1/scores/{ticker}.
      expect(s, ticker).to.not.equal(null);
      expect(c, ticker).to.include({
        date: s.date,
        main_street: s.main_street,
        wall_street: s.wall_street,
        service_score: s.service_score,
        divergence_gap: s.divergence_gap,
      });
    }
    // Scored first, by service_score descending; unscored last.
    const ss = (detail.body.constituents as Row[]).map((c) => c.service_score as number | null);
    const scoredSs = ss.filter((x): x is number => x !== null);
    expect(ss).to.deep.equal([...[...scoredSs].sort((a, b) => b - a), ...ss.filter((x) => x === null)]);

    const scored = (detail.body.constituents as Row[]).filter((c) => c.service_score !== null);
    const aggregates = {
      stock_count: tickers.length,
      scored_count: Object.values(expected).filter((w) => w !== null).length,
      avg_main_street: mean1(scored.map((c) => c.main_street as number)),
      avg_wall_street: mean1(scored.map((c) => c.wall_street as number)),
      avg_service_score: mean1(scored.map((c) => c.service_score as number)),
    };
    expect(detail.body).to.include(aggregates);

    const list = await get('/v1/themes', key);
    expect(list.status).to.equal(200);
    expect(list.body.as_of).to.equal(asOf);
    const item = (list.body.themes as Row[]).find((t) => t.slug === SLUG)!;
    expect(item).to.include(aggregates);
    expect(item.tickers).to.deep.equal(tickers);
    return { key, detail };
  }

  it('counts a late or halted constituent with its latest score on the live tier (and the detail shows that row)', async () => {
    await check('hobbyist', LIVE_AS_OF, {
      LATEX: ['2019-06-05', 80, 40],
      HALTX: ['2019-06-11', 70, 20],
      GAPX: ['2019-06-13', 65, 35],
      NEWX: ['2019-06-12', 90, 10],
      NONEX: null,
      AAPL: [LIVE_AS_OF, 0, 0],
    });
  });

  it('never shows a free key a score newer than its delayed as_of; a constituent with nothing on or before it stays unscored', async () => {
    const { key } = await check('free', FREE_AS_OF, {
      LATEX: ['2019-06-05', 80, 40],
      HALTX: ['2019-06-04', 30, 60],
      GAPX: ['2019-06-06', 55, 45],
      NEWX: null,
      NONEX: null,
      AAPL: [FREE_AS_OF, 0, 0],
    });
    // Every theme's constituents, for the free key: nothing dated after its as_of.
    const list = await get('/v1/themes', key);
    for (const t of list.body.themes as Row[]) {
      const d = await get(`/v1/themes/${t.slug as string}`, key);
      expect(d.status).to.equal(200);
      expect(d.body).to.include({ scored_count: t.scored_count, avg_service_score: t.avg_service_score });
      for (const c of d.body.constituents as Row[]) {
        if (c.date !== null) expect(c.date <= FREE_AS_OF, `${t.slug as string} ${c.ticker as string} dated ${c.date}`).to.equal(true);
      }
    }
  });
});
