import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import type { Tier } from '../../src/domain/plans.js';
import { startTestServer, type TestServer } from '../support/server.js';

type Json = Record<string, any>;

// 12:00 UTC on Monday 2019-04-01: live keys see Friday 2019-03-29.
const NOW = '2019-04-01T12:00:00Z';

/**
 * Issue 28 item 8, "the contract says exactly what is served", over real HTTP: one spelling per
 * path, as_known_at declared as it is parsed, a declared 500, descriptive operation ids, problem
 * fields typed per code, no-store on private answers, and a 401 that names its challenge.
 */
describe('The contract says exactly what is served', function () {
  this.timeout(120_000);
  let server: TestServer;
  let doc: Json;

  const call = async (method: string, path: string, key?: string | null, init: { json?: unknown; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    if (key) headers['X-API-Key'] = key;
    if (init.json !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${server.url}${path}`, { method, headers, body: init.json === undefined ? undefined : JSON.stringify(init.json), redirect: 'manual' });
    const text = await res.text();
    let body: Json = {};
    try {
      body = JSON.parse(text) as Json;
    } catch {
      // A page, a file or no body.
    }
    return { status: res.status, headers: res.headers, body, text };
  };
  const newKey = async (tier: Tier) => (await createAccountWithKey(server.services, { tier })).key;
  /** The key's balance, from a free call (`X-Credits-Remaining`). */
  const balance = async (key: string) => (await call('GET', '/v1/usage', key)).headers.get('x-credits-remaining');

  before(async () => {
    server = await startTestServer({ now: NOW, env: { PUBLIC_BASE_URL: 'https://api.scores.test' } });
    doc = (await call('GET', '/openapi.json')).body;
  });
  after(() => server?.stop());

  describe('one spelling per path: case-sensitive, strict routing', () => {
    it('answers a case variant of the literal /v1/scores/history with a free 404 naming the path, not the multi-ticker history', async () => {
      const key = await newKey('quant');
      const before = await balance(key);
      for (const spelling of ['HISTORY', 'History', 'hIsToRy']) {
        const r = await call('GET', `/v1/scores/${spelling}?tickers=AAPL&start=2019-03-25`, key);
        expect(r.status, spelling).to.equal(404);
        expect(r.body, spelling).to.include({ code: 'not_found' });
        expect(r.body['detail'], spelling).to.include('the path is /v1/scores/history');
        expect(r.body, spelling).to.not.have.property('rows');
      }
      expect(await balance(key)).to.equal(before);
      // The documented spelling is served and charged; a ticker keeps its case-insensitivity.
      expect((await call('GET', '/v1/scores/history?tickers=AAPL&start=2019-03-25', key)).status).to.equal(200);
      expect((await call('GET', '/v1/scores/aapl', key)).status).to.equal(200);
      expect(await balance(key)).to.not.equal(before);
    });

    it('answers a case variant or a trailing slash of any path, not only /v1, with a 404', async () => {
      for (const [method, path] of [
        ['GET', '/OpenAPI.json'],
        ['GET', '/openapi.json/'],
        ['GET', '/HEALTHZ'],
        ['GET', '/healthz/'],
        ['GET', '/Docs'],
        ['GET', '/docs/Errors'],
        ['GET', '/License'],
        ['GET', '/Stocks/AAPL'],
        ['GET', '/stocks/AAPL/'],
        ['GET', '/Account/sign-in'],
        ['GET', '/account/sign-in/'],
        ['POST', '/MCP/http'],
        ['POST', '/mcp/http/'],
      ] as const) {
        const r = await call(method, path);
        expect(r.status, `${method} ${path}`).to.equal(404);
      }
      // The documented spellings are served.
      for (const path of ['/openapi.json', '/healthz', '/docs', '/docs/errors', '/license', '/stocks/AAPL', '/account/sign-in']) {
        expect((await call('GET', path)).status, path).to.equal(200);
      }
    });
  });
});
