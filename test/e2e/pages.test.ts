import { expect } from 'chai';
import { loadUsTickers } from '../../commands/seed-demo/dataset/us-tickers.js';
import type { TestServer } from '../support/server.js';
import { demoKey, getJson, startTestServer, tempDir } from '../support/server.js';
import { rmSync } from 'node:fs';
import { textOf } from '../support/html-text.js';

const BASE = 'https://api.example.test';


async function getPage(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

describe('Public pages', () => {
  let server: TestServer;
  before(async () => {
    // Monday 2019-04-01, noon: the free tier's cutoff is Monday 2019-03-25, a trading day whose
    // scores were published that evening; a paid key already sees Friday 2019-03-29.
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: BASE } });
  });
  after(() => server?.stop());

  describe('GET /stocks/{ticker}, the citation page', () => {
    const FREE_AS_OF = '2019-03-25';
    const PAID_AS_OF = '2019-03-29';
    /** A citation_url (on the public base URL) as a URL of the test server. */
    const cited = (citation: string) => {
      const u = new URL(citation);
      return `${server.url}${u.pathname}${u.search}`;
    };

    it("shows the free tier's scores as of its delayed as-of date, and nothing newer", async () => {
      const { status, headers, body } = await getPage(`${server.url}/stocks/AAPL`);
      expect(status).to.equal(200);
      expect(headers.get('content-type')).to.match(/^text\/html/);
      const text = textOf(body);
      expect(text).to.include('Apple Inc.').and.include('Information Technology');
      expect(text).to.include(`Scores as of ${FREE_AS_OF}`);

      // The values are the row a paid key reads for that date.
      const history = await getJson(`${server.url}/v1/scores/AAPL/history?start=${FREE_AS_OF}&end=${FREE_AS_OF}`, demoKey(server.dir, 'quant'));
      expect(history.status).to.equal(200);
      const row = history.body.rows[0];
      expect(row.date).to.equal(FREE_AS_OF);
      const shown = (field: string) => new RegExp(`data-field="${field}">([^<]+)<`).exec(body)?.[1];
      expect(Number(shown('service_score'))).to.be.closeTo(row.service_score, 0.051);
      expect(Number(shown('main_street'))).to.be.closeTo(row.main_street, 0.051);
      expect(Number(shown('wall_street'))).to.be.closeTo(row.wall_street, 0.051);

      const live = await getJson(`${server.url}/v1/scores/AAPL`, demoKey(server.dir, 'quant'));
      expect(live.body.date > FREE_AS_OF, 'a paid key sees newer data than the page').to.equal(true);
      const dates = [...new Set(text.match(/\d{4}-\d{2}-\d{2}/g))];
      expect(dates).to.include(FREE_AS_OF);
      expect(dates.filter((d) => d > FREE_AS_OF)).to.deep.equal([]);
    });

    it('charts and tabulates the recent visible history, newest first', async () => {
      const { body } = await getPage(`${server.url}/stocks/AAPL`);
      expect(body).to.match(/<svg class="sparkline"[^>]*role="img"/);
      expect(body).to.match(/<polyline [^>]*points="[\d., ]+"/);
      const table = /<table class="history"[\s\S]*?<\/table>/.exec(body)?.[0] ?? '';
      const rowDates = [...table.matchAll(/<tr><td>(\d{4}-\d{2}-\d{2})/g)].map((m) => m[1]);
      expect(rowDates).to.have.length(10);
      expect(rowDates[0]).to.equal(FREE_AS_OF);
      expect([...rowDates].sort().reverse()).to.deep.equal(rowDates);
    });

    it('gives the attribution line the Free licence asks for, and points to the docs and the licence', async () => {
      const { body } = await getPage(`${server.url}/stocks/AAPL`);
      const text = textOf(body);
      expect(text).to.include(`Data: Scores API Main-Street/Wall-Street scores, as of ${FREE_AS_OF} — ${BASE}/stocks/AAPL?as_of=${FREE_AS_OF} `);
      expect(text).to.match(/need an API key/);
      expect(text).to.include('X-API-Key');
      expect(body).to.include('href="/docs"').and.include('href="/license"');
      expect(body).to.include(`<link rel="canonical" href="${BASE}/stocks/AAPL">`);
    });

    it('is the page citation_url names, dated with the response', async () => {
      const score = await getJson(`${server.url}/v1/scores/MSFT`, demoKey(server.dir, 'quant'));
      expect(score.body.citation_url).to.equal(`${BASE}/stocks/MSFT?as_of=${PAID_AS_OF}`);
      const { status, body } = await getPage(cited(score.body.citation_url));
      expect(status).to.equal(200);
      expect(body).to.include(`<link rel="canonical" href="${BASE}/stocks/MSFT?as_of=${PAID_AS_OF}">`);
    });

    describe('with ?as_of=, the date a citation names', () => {
      /** The four numbers the page shows, or null where it shows none. */
      const shownNumbers = (body: string) => {
        const field = (name: string) => new RegExp(`data-field="${name}">([^<]+)<`).exec(body)?.[1] ?? null;
        const gap = field('divergence_gap');
        return {
          service_score: field('service_score') && Number(field('service_score')),
          main_street: field('main_street') && Number(field('main_street')),
          wall_street: field('wall_street') && Number(field('wall_street')),
          divergence_gap: gap && Number(gap.replace('−', '-').replace('+', '')),
        };
      };
      // History rows carry no divergence_gap: it is main_street − wall_street to one decimal.
      const numbersOf = (r: Record<string, any>) => ({
        service_score: r.service_score,
        main_street: r.main_street,
        wall_street: r.wall_street,
        divergence_gap: 'divergence_gap' in r ? r.divergence_gap : Math.round((r.main_street - r.wall_street) * 10) / 10,
      });

      it("shows a free key's response the very numbers it cites", async () => {
        const free = demoKey(server.dir, 'free');
        for (const ticker of ['AAPL', 'JPM', 'KO']) {
          const score = await getJson(`${server.url}/v1/scores/${ticker}`, free);
          expect(score.body.citation_url).to.equal(`${BASE}/stocks/${ticker}?as_of=${FREE_AS_OF}`);
          const { status, body } = await getPage(cited(score.body.citation_url));
          expect(status, ticker).to.equal(200);
          expect(shownNumbers(body), ticker).to.deep.equal(numbersOf(score.body));
          expect(textOf(body)).to.include(`Scores as of ${FREE_AS_OF}`);
          expect(body).to.not.include('subscriber-notice');
        }
        const history = await getJson(`${server.url}/v1/scores/AAPL/history?start=2019-03-01`, free);
        expect(history.body.citation_url).to.equal(`${BASE}/stocks/AAPL?as_of=${FREE_AS_OF}`);
        const { body } = await getPage(cited(history.body.citation_url));
        expect(shownNumbers(body)).to.deep.equal(numbersOf(history.body.rows.at(-1)));
      });

      it("tells a hobbyist's citation that its values are subscriber data, and shows no numbers in their place", async () => {
        const score = await getJson(`${server.url}/v1/scores/AAPL`, demoKey(server.dir, 'hobbyist'));
        expect(score.body.as_of).to.equal(PAID_AS_OF);
        expect(score.body.citation_url).to.equal(`${BASE}/stocks/AAPL?as_of=${PAID_AS_OF}`);
        const { status, headers, body } = await getPage(cited(score.body.citation_url));
        expect(status).to.equal(200);
        expect(headers.get('cache-control')).to.equal('public, max-age=300');
        const text = textOf(body);
        expect(text).to.include(`The values cited with this page are subscriber data as of ${PAID_AS_OF} , not shown publicly`);
        expect(text).to.include('from 2019-04-05 .');
        expect(body).to.include('href="#methodology"').and.include('id="methodology"');
        expect(text).to.include(`Data: Scores API Main-Street/Wall-Street scores, as of ${PAID_AS_OF} — ${BASE}/stocks/AAPL?as_of=${PAID_AS_OF}`);
        // No numbers at all: neither the subscriber's nor the public day's under this citation.
        expect(body).to.not.include('data-field=');
        expect(body).to.not.include('class="sparkline"').and.not.include('class="history"');
        expect(text).to.not.include(FREE_AS_OF);
        expect(body).to.include('href="/stocks/AAPL"');
      });

      it('shows an earlier public day with that day as its end: scores, chart and table', async () => {
        const day = '2019-03-20';
        const { status, body } = await getPage(`${server.url}/stocks/AAPL?as_of=${day}`);
        expect(status).to.equal(200);
        const row = (await getJson(`${server.url}/v1/scores/AAPL/history?start=${day}&end=${day}`, demoKey(server.dir, 'quant'))).body.rows[0];
        expect(shownNumbers(body)).to.deep.equal(numbersOf(row));
        const text = textOf(body);
        expect(text).to.include(`Scores as of ${day}`);
        expect(text).to.include(`as of ${day} — ${BASE}/stocks/AAPL?as_of=${day}`);
        const table = /<table class="history"[\s\S]*?<\/table>/.exec(body)?.[0] ?? '';
        expect([...table.matchAll(/<tr><td>(\d{4}-\d{2}-\d{2})/g)][0]?.[1]).to.equal(day);
        expect([...new Set(text.match(/\d{4}-\d{2}-\d{2}/g))].filter((d) => d > day)).to.deep.equal([]);
        expect(body).to.include(`<link rel="canonical" href="${BASE}/stocks/AAPL?as_of=${day}">`);
      });

      it('shows the latest row on or before a day without one (a Sunday), saying so', async () => {
        const { status, body } = await getPage(`${server.url}/stocks/AAPL?as_of=2019-03-24`);
        expect(status).to.equal(200);
        const friday = (await getJson(`${server.url}/v1/scores/AAPL/history?start=2019-03-22&end=2019-03-22`, demoKey(server.dir, 'quant'))).body.rows[0];
        expect(shownNumbers(body)).to.deep.equal(numbersOf(friday));
        expect(textOf(body)).to.include('2019-03-24 has no row of its own: these are the scores of 2019-03-22, the latest on or before it.');
      });

      it('answers a date that is not one, or is given twice, or lies after today, with a 400 page', async () => {
        for (const q of ['yesterday', '2019-13-01', '2019-02-30', '20190320', '2019-03-20&as_of=2019-03-21', '2019-04-02']) {
          const { status, headers, body } = await getPage(`${server.url}/stocks/AAPL?as_of=${q}`);
          expect(status, q).to.equal(400);
          expect(headers.get('content-type')).to.match(/^text\/html/);
          expect(textOf(body), q).to.include('Bad date').and.include('as_of');
          expect(body, q).to.not.include('data-field=');
        }
        const evil = await getPage(`${server.url}/stocks/AAPL?as_of=${encodeURIComponent('<b>x</b>')}`);
        expect(evil.status).to.equal(400);
        expect(evil.body).to.include('&lt;b&gt;x&lt;/b&gt;').and.not.include('<b>x</b>');
      });

      it('answers an unknown ticker, or a day before its first scores, with a 404 page', async () => {
        expect((await getPage(`${server.url}/stocks/NOPEX?as_of=${FREE_AS_OF}`)).status).to.equal(404);
        const early = await getPage(`${server.url}/stocks/AAPL?as_of=2018-12-31`);
        expect(early.status).to.equal(404);
        expect(textOf(early.body)).to.include('No scores for AAPL as of 2018-12-31');
      });

      it('keeps the date through the redirect of a lower-case symbol', async () => {
        const { status, headers } = await getPage(`${server.url}/stocks/aapl?as_of=${FREE_AS_OF}`);
        expect(status).to.equal(301);
        expect(headers.get('location')).to.equal(`/stocks/AAPL?as_of=${FREE_AS_OF}`);
      });

      it('dates the /docs citation of a response about many stocks, and /docs serves it', async () => {
        const screener = await getJson(`${server.url}/v1/screener?limit=5`, demoKey(server.dir, 'free'));
        expect(screener.body.citation_url).to.equal(`${BASE}/docs?as_of=${FREE_AS_OF}`);
        expect((await getPage(cited(screener.body.citation_url))).status).to.equal(200);
      });
    });

    it('may be cached by anyone for five minutes', async () => {
      const { headers } = await getPage(`${server.url}/stocks/AAPL`);
      expect(headers.get('cache-control')).to.equal('public, max-age=300');
    });

    it('needs no key and serves every listed stock, outside the free coverage too', async () => {
      const outside = loadUsTickers().find((t) => t.size_rank > 100)!;
      const { status, body } = await getPage(`${server.url}/stocks/${outside.symbol}`);
      expect(status).to.equal(200);
      const text = textOf(body);
      expect(text).to.include(outside.company);
      expect(text).to.include(`Scores as of ${FREE_AS_OF}`);
      expect(text).to.include('Free keys cover the 100 largest stocks');
    });

    it('redirects a lower-case symbol to the canonical page', async () => {
      const { status, headers } = await getPage(`${server.url}/stocks/aapl`);
      expect(status).to.equal(301);
      expect(headers.get('location')).to.equal('/stocks/AAPL');
    });

    it('answers an unknown ticker with a 404 HTML page', async () => {
      const { status, headers, body } = await getPage(`${server.url}/stocks/NOPEX`);
      expect(status).to.equal(404);
      expect(headers.get('content-type')).to.match(/^text\/html/);
      expect(textOf(body)).to.include('Unknown ticker').and.include('NOPEX');
    });

    it('escapes text from the read models and from the request', async () => {
      const att = await getPage(`${server.url}/stocks/T`);
      expect(att.status).to.equal(200);
      expect(att.body).to.include('AT&amp;T Inc.');
      expect(att.body).to.not.include('AT&T Inc.');

      const mcd = await getPage(`${server.url}/stocks/MCD`);
      expect(mcd.body).to.include('McDonald&#39;s Corporation');

      const evil = await getPage(`${server.url}/stocks/${encodeURIComponent('<script>alert(1)</script>')}`);
      expect(evil.status).to.equal(404);
      expect(evil.body).to.include('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(evil.body).to.not.include('<script>alert(1)');
    });

    it('forbids scripts with its content security policy', async () => {
      const { headers } = await getPage(`${server.url}/stocks/AAPL`);
      expect(headers.get('content-security-policy')).to.match(/default-src 'none'/);
    });

    it("carries helmet's browser headers, framing denied", async () => {
      const { headers } = await getPage(`${server.url}/stocks/AAPL`);
      expect(headers.get('x-frame-options')).to.equal('DENY');
      expect(headers.get('referrer-policy')).to.equal('no-referrer');
      expect(headers.get('cross-origin-opener-policy')).to.equal('same-origin');
      expect(headers.get('x-content-type-options')).to.equal('nosniff');
      expect(headers.get('strict-transport-security')).to.match(/^max-age=\d+/);
    });
  });

  describe('GET /license', () => {
    // The spec's licence table, word for word.
    const TERMS = [
      ['Free', 'Personal projects, with attribution to the service', 'Commercial use, redistribution, removing attribution'],
      ['Hobbyist', 'Personal trading, private tools', 'Commercial products, sharing data'],
      ['Builder', "Internal commercial use in the user's company", "Displaying data to the user's users, redistribution"],
      ['Quant', 'Indie apps displaying scores, with attribution', 'Bulk redistribution, resale'],
      ['Enterprise', 'Redistribution, embeds, firm-wide feeds, custom terms', 'none'],
    ] as const;

    it("shows every tier's permitted and not-permitted terms as a table", async () => {
      const { status, headers, body } = await getPage(`${server.url}/license`, { accept: 'text/html' });
      expect(status).to.equal(200);
      expect(headers.get('content-type')).to.match(/^text\/html/);
      const rows = [...body.matchAll(/<tr id="\w+"><th scope="row">([^<]*)<\/th><td>([^<]*)<\/td><td>([^<]*)<\/td><\/tr>/g)].map((m) =>
        m.slice(1).map(textOf).map((s) => s.trim()),
      );
      expect(rows).to.deep.equal(TERMS.map((t) => [...t]));
      expect(textOf(body)).to.include('Permitted').and.include('Not permitted');
    });

    it('answers JSON when asked for it', async () => {
      const { status, type, body } = await (async () => {
        const res = await fetch(`${server.url}/license`, { headers: { accept: 'application/json' } });
        return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as Record<string, any> };
      })();
      expect(status).to.equal(200);
      expect(type).to.match(/^application\/json/);
      expect(body.license).to.equal(`${BASE}/license`);
      const tiers = body.tiers as { name: string; permitted: string; not_permitted: string }[];
      expect(tiers.map((t) => [t.name, t.permitted, t.not_permitted])).to.deep.equal(TERMS.map((t) => [...t]));
    });

    it('falls back to the page for an Accept it does not speak', async () => {
      const { status, headers } = await getPage(`${server.url}/license`, { accept: 'image/png' });
      expect(status).to.equal(200);
      expect(headers.get('content-type')).to.match(/^text\/html/);
    });
  });

  describe('GET /docs', () => {
    const CODES = ['bad_request', 'unauthorized', 'key_forbidden', 'coverage', 'tier', 'not_found', 'method_not_allowed', 'payload_too_large', 'unsupported_media_type', 'range_not_satisfiable', 'headers_too_large', 'limit_exceeded', 'credits_exhausted', 'rate_limited'];

    it('introduces the base URL, the key header and the error codes, and loads Redoc from this server', async () => {
      const { status, body } = await getPage(`${server.url}/docs`);
      expect(status).to.equal(200);
      const text = textOf(body);
      expect(text).to.include(BASE);
      expect(text).to.include('X-API-Key');
      for (const code of CODES) expect(body, code).to.include(`href="/docs/errors#${code}"`);
      expect(body).to.include('<script src="/docs/assets/redoc.standalone.js"');
      expect(body).to.include('<div id="redoc">');
      expect(body).to.not.match(/<script[^>]+src="https?:/);
    });

    it('serves the Redoc bundle and the script that points it at /openapi.json', async () => {
      const bundle = await fetch(`${server.url}/docs/assets/redoc.standalone.js`);
      expect(bundle.status).to.equal(200);
      expect(bundle.headers.get('content-type')).to.match(/javascript/);
      expect((await bundle.arrayBuffer()).byteLength).to.be.greaterThan(100_000);
      const init = await getPage(`${server.url}/docs/assets/docs.js`);
      expect(init.body).to.include("Redoc.init('/openapi.json'");
    });

    it('has an anchor on /docs/errors for every problem code', async () => {
      const { status, body } = await getPage(`${server.url}/docs/errors`);
      expect(status).to.equal(200);
      for (const code of CODES) expect(body, code).to.include(`<section id="${code}">`);
    });

    it("is where a problem's type points", async () => {
      const problem = await getJson(`${server.url}/v1/scores/AAPL`);
      expect(problem.status).to.equal(401);
      const type = new URL(problem.body.type as string);
      expect(`${type.origin}${type.pathname}`).to.equal(`${BASE}/docs/errors`);
      const { body } = await getPage(`${server.url}${type.pathname}`);
      expect(body).to.include(`<section id="${type.hash.slice(1)}">`);
    });
  });

  describe('The retired charts endpoint', () => {
    it('redirects permanently to /v1/coverage, keeping the query string, and says it is deprecated', async () => {
      const { status, headers } = await getPage(`${server.url}/charts/v1/companies/with-social-heat-score?since=2019-01-01&x=a%20b`);
      expect(status).to.equal(308);
      expect(headers.get('location')).to.equal(`${BASE}/v1/coverage?since=2019-01-01&x=a%20b`);
      expect(headers.get('deprecation')).to.match(/^(true|@\d+)$/);
      const link = headers.get('link') ?? '';
      expect(link).to.include(`<${BASE}/v1/coverage>; rel="successor-version"`);
      expect(link).to.match(new RegExp(`<${BASE}/docs[^>]*>; rel="deprecation"`));
    });

    it('redirects without a query string too', async () => {
      const { status, headers } = await getPage(`${server.url}/charts/v1/companies/with-social-heat-score`);
      expect(status).to.equal(308);
      expect(headers.get('location')).to.equal(`${BASE}/v1/coverage`);
    });
  });
});

describe('A citation over time: the same page, a week later', function () {
  // A hobbyist cites Friday 2019-03-29 on Monday 2019-04-01; a week later the free delay reaches
  // that day and the page shows it. IT's row of that day was restated on 2019-04-03, after the
  // response: the page shows the restated values and, beside them, the ones the response had.
  const dir = tempDir();
  let server: TestServer | undefined;
  const cited: Record<string, Record<string, any>> = {};
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', dir, env: { PUBLIC_BASE_URL: BASE } });
    for (const ticker of ['AAPL', 'IT']) cited[ticker] = (await getJson(`${server.url}/v1/scores/${ticker}`, demoKey(dir, 'hobbyist'))).body;
    await server.stop();
    server = await startTestServer({ now: '2019-04-08T12:00:00Z', dir, env: { PUBLIC_BASE_URL: BASE } });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = async (citation: string) => {
    const u = new URL(citation);
    return getPage(`${server!.url}${u.pathname}${u.search}`);
  };
  const field = (body: string, name: string) => Number(new RegExp(`data-field="${name}">([^<]+)<`).exec(body)?.[1]);

  it("shows a hobbyist's cited numbers once the delay has passed", async () => {
    const aapl = cited['AAPL']!;
    expect(aapl.citation_url).to.equal(`${BASE}/stocks/AAPL?as_of=2019-03-29`);
    const { status, body } = await open(aapl.citation_url);
    expect(status).to.equal(200);
    expect(body).to.not.include('subscriber-notice').and.not.include('id="restated"');
    for (const name of ['service_score', 'main_street', 'wall_street']) expect(field(body, name), name).to.equal(aapl[name]);
  });

  it('shows a row restated since the response with the values the response had, and when each was current', async () => {
    const it_ = cited['IT']!;
    const { status, body } = await open(it_.citation_url);
    expect(status).to.equal(200);
    const now = (await getJson(`${server!.url}/v1/scores/IT/history?start=2019-03-29&end=2019-03-29`, demoKey(dir, 'quant'))).body.rows[0];
    expect(field(body, 'main_street')).to.equal(now.main_street);
    expect([now.main_street, now.wall_street]).to.not.deep.equal([it_.main_street, it_.wall_street]);
    expect(textOf(body)).to.include('These are the values of 2019-03-29 as restated at 2019-04-03T05:51:07.000Z.');
    const earlier = /<table class="versions"[\s\S]*?<\/table>/.exec(body)?.[0] ?? '';
    const cells = [...earlier.matchAll(/<tbody><tr><td>([^<]+)<\/td><td>([^<]+)<\/td><td class="num">([^<]+)<\/td><td class="num">([^<]+)<\/td><td class="num">([^<]+)<\/td>/g)].map((m) => m.slice(1));
    expect(cells).to.deep.equal([
      ['2019-03-29T22:00:00.000Z', '2019-04-03T05:51:07.000Z', it_.main_street.toFixed(1), it_.wall_street.toFixed(1), it_.service_score.toFixed(1)],
    ]);
  });

  it('shows a cited day older than the free history depth, without chart or table', async () => {
    // 2019-04-08 − 90 days = 2019-01-08: the 7th is beyond the free tier's history.
    const { status, body } = await open(`${BASE}/stocks/AAPL?as_of=2019-01-07`);
    expect(status).to.equal(200);
    const row = (await getJson(`${server!.url}/v1/scores/AAPL/history?start=2019-01-07&end=2019-01-07`, demoKey(dir, 'quant'))).body.rows[0];
    expect(field(body, 'service_score')).to.equal(row.service_score);
    expect(textOf(body)).to.include('2019-01-07 is older than the 90 days of history the free tier shows');
    expect(body).to.not.include('class="sparkline"');
  });
});
