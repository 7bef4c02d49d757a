import { expect } from 'chai';
import type { TestServer } from '../support/server.js';
import { demoKey, getJson, startTestServer } from '../support/server.js';

describe('Scores over HTTP', () => {
  let server: TestServer;
  const get = (base: string, path: string) => getJson(`${base}${path}`, demoKey(server.dir, 'quant'));
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: 'https://api.example.test' } });
  });
  after(() => server.stop());

  describe('GET /v1/scores/{ticker}', () => {
    it('returns the latest published scores with the provenance wrapper', async () => {
      const { status, body } = await get(server.url, '/v1/scores/AAPL');
      expect(status).to.equal(200);
      // 2019-04-01's scores are published at 22:00 UTC: at noon the latest day is Friday 2019-03-29.
      expect(body).to.include({ ticker: 'AAPL', date: '2019-03-29', as_of: '2019-03-29' });
      expect(body.main_street).to.be.within(0, 100);
      expect(body.wall_street).to.be.within(0, 100);
      expect(body.service_score).to.be.within(0, 100);
      expect(body.divergence_gap).to.be.closeTo(body.main_street - body.wall_street, 0.051);
      expect(body.estimated).to.be.a('boolean');
      expect(body.source).to.be.a('string').and.not.empty;
      expect(body.citation_url).to.equal('https://api.example.test/stocks/AAPL?as_of=2019-03-29');
      expect(Object.keys(body).sort()).to.deep.equal(
        ['as_of', 'citation_url', 'date', 'divergence_gap', 'estimated', 'main_street', 'service_score', 'source', 'ticker', 'wall_street'],
      );
    });

    it("carries the API's security headers and a request id, not the HTML pages' browser headers", async () => {
      const { headers } = await get(server.url, '/v1/scores/AAPL');
      expect(headers.get('x-content-type-options')).to.equal('nosniff');
      expect(headers.get('strict-transport-security')).to.match(/^max-age=\d+/);
      expect(headers.get('x-frame-options')).to.equal('DENY');
      expect(headers.get('x-request-id')).to.match(/^req_[A-Za-z0-9_-]{16}$/);
      expect(headers.get('cross-origin-opener-policy')).to.equal(null);
    });

    it('treats the ticker case-insensitively', async () => {
      const { status, body } = await get(server.url, '/v1/scores/aapl');
      expect(status).to.equal(200);
      expect(body.ticker).to.equal('AAPL');
    });

    it('answers an unknown ticker with a 404 problem', async () => {
      const { status, type, body } = await get(server.url, '/v1/scores/NOPEX');
      expect(status).to.equal(404);
      expect(type).to.match(/application\/problem\+json/);
      expect(body).to.include({ status: 404, code: 'not_found', title: 'Not found' });
      expect(body.type).to.equal('https://api.example.test/docs/errors#not_found');
    });
  });

  describe('GET /v1/scores/{ticker}/history', () => {
    it('returns the rows between start and end, oldest first', async () => {
      const { status, body } = await get(server.url, '/v1/scores/MSFT/history?start=2019-02-01&end=2019-02-28');
      expect(status).to.equal(200);
      // February 2019 had 19 NYSE trading days (Presidents' Day on the 18th).
      expect(body.count).to.equal(19);
      expect(body.rows).to.have.length(19);
      expect(body.rows[0].date).to.equal('2019-02-01');
      expect(body.rows[18].date).to.equal('2019-02-28');
      expect(body.rows.map((r: { date: string }) => r.date)).to.not.include('2019-02-18');
      expect(Object.keys(body.rows[0]).sort()).to.deep.equal(['date', 'estimated', 'main_street', 'service_score', 'wall_street']);
      expect(body).to.include({ ticker: 'MSFT', history_floor: '2019-02-01' });
      expect(body.provenance_note).to.be.a('string').and.not.empty;
    });

    it('refuses an impossible month with a 400, not a 500', async () => {
      const { status, body } = await get(server.url, '/v1/scores/MSFT/history?end=2019-13-01');
      expect(status).to.equal(400);
      expect(body.detail).to.match(/end/);
    });

    it('refuses a malformed date with a 400 problem naming the parameter', async () => {
      const { status, body } = await get(server.url, '/v1/scores/MSFT/history?start=2019-02-30');
      expect(status).to.equal(400);
      expect(body.code).to.equal('bad_request');
      expect(body.detail).to.match(/start/);
    });
  });

  describe('Service endpoints', () => {
    it('reports health with the log position', async () => {
      const { status, body } = await get(server.url, '/healthz');
      expect(status).to.equal(200);
      expect(body.status).to.equal('ok');
      expect(body.log_position).to.be.a('string');
      expect(body.projections).to.include({ state: 'live', error: null });
      expect(body.projections.position <= body.log_position).to.equal(true);
    });

    it('serves the OpenAPI document with the public base URL', async () => {
      const { status, body } = await get(server.url, '/openapi.json');
      expect(status).to.equal(200);
      expect(body.openapi).to.match(/^3\./);
      expect(body.paths).to.have.property('/v1/scores/{ticker}');
      expect(body.paths).to.have.property('/v1/scores/{ticker}/history');
      expect(body.servers).to.deep.equal([{ url: 'https://api.example.test' }]);
    });

    it('answers an unknown route with a 404 problem', async () => {
      const { status, body } = await get(server.url, '/v1/nothing-here');
      expect(status).to.equal(404);
      expect(body.code).to.equal('not_found');
    });
  });
});
