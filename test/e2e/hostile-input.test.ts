import { expect } from 'chai';
import { connect } from 'node:net';
import { request } from 'node:http';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

/**
 * Bad input found by a fuzzing pass over real HTTP: each gets a problem+json answer with a stable
 * code (never a 500, an empty body, or a call answered and billed as if the input were absent).
 */
describe('Hostile input over HTTP', function () {
  this.timeout(120_000);
  let server: TestServer;
  let key = '';
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    key = demoKey(server.dir, 'quant');
  });
  after(() => server?.stop());

  async function call(path: string, init: RequestInit = {}) {
    const res = await fetch(`${server.url}${path}`, { ...init, headers: { 'X-API-Key': key, ...(init.headers as Record<string, string>) } });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', credits: res.headers.get('x-credits-remaining'), allow: res.headers.get('allow'), text };
  }
  const balance = async () => (await call('/v1/usage')).credits;
  async function expectProblem(path: string, status: number, code: string, init: RequestInit = {}) {
    const before = await balance();
    const r = await call(path, init);
    expect(r.status, `${path}: ${r.text}`).to.equal(status);
    expect(r.type).to.match(/^application\/problem\+json/);
    const body = JSON.parse(r.text) as { code: string; detail: string };
    expect(body.code).to.equal(code);
    expect(await balance(), 'nothing charged').to.equal(before);
    return body;
  }

  describe('query parameters', () => {
    it('refuses an array-style or misspelt parameter instead of ignoring it (tickers[]=AAPL bought the whole universe)', async () => {
      const body = await expectProblem('/v1/scores/history?start=2019-06-10&tickers[]=AAPL', 400, 'bad_request');
      expect(body.detail).to.match(/unknown query parameter "tickers\[\]": it takes .*tickers/);
      await expectProblem('/v1/screener?limt=1', 400, 'bad_request');
      await expectProblem('/v1/scores/AAPL?foo=1', 400, 'bad_request');
    });

    it('reads past the 1,000th parameter (node stopped there, dropping a trailing tickers=)', async () => {
      const junk = Array.from({ length: 1000 }, (_, i) => `j${i}=1`).join('&');
      const body = await expectProblem(`/v1/scores/history?start=2019-06-10&${junk}&tickers=AAPL`, 400, 'bad_request');
      expect(body.detail).to.match(/unknown query parameters "j0", "j1"/);
    });

    it('says so when a request carries several X-API-Key headers', async () => {
      const r = await fetch(`${server.url}/v1/usage`, { headers: [['X-API-Key', key], ['X-API-Key', key]] });
      expect(r.status).to.equal(401);
      expect(((await r.json()) as { detail: string }).detail).to.equal('send one X-API-Key header (this request has several)');
    });

    it('still checks the key and the plan first', async () => {
      const r = await fetch(`${server.url}/v1/earnings?bogus=1`, { headers: { 'X-API-Key': demoKey(server.dir, 'hobbyist') } });
      expect(r.status).to.equal(403);
      expect(((await r.json()) as { code: string }).code).to.equal('tier');
      expect((await fetch(`${server.url}/v1/screener?bogus=1`)).status).to.equal(401);
    });

    it('refuses an instant that an offset carries past year 9999 (it compared as later than everything)', async () => {
      await expectProblem('/v1/scores/history?tickers=AAPL&start=2019-06-01&since=9999-12-31T23:59:59-00:01', 400, 'bad_request');
      await expectProblem('/v1/scores/AAPL/history?start=2019-06-01&as_known_at=9999-12-31T23:59:59-00:01', 400, 'bad_request');
      // Years 0000-0099 are real years, not 1900-1999.
      const early = await call('/v1/scores/AAPL/history?start=2019-06-01&as_known_at=0050-01-01T00:00:00Z');
      expect(early.status).to.equal(200);
      expect((JSON.parse(early.text) as { count: number }).count).to.equal(0);
    });

    it('answers a start long before any data (year 0000) on social heat with the data there is', async () => {
      const r = await call('/v1/scores/social-heat/AAPL?start=0000-01-01&end=2019-01-10');
      expect(r.status, r.text).to.equal(200);
      expect((JSON.parse(r.text) as { rows: unknown[] }).rows.length).to.be.greaterThan(0);
    });

    it('refuses a forged ledger cursor whose values are no cursor values', async () => {
      for (const forged of [[true, 'x'], [{ a: 1 }, 'x']]) {
        const cursor = Buffer.from(JSON.stringify(forged)).toString('base64url');
        const body = await expectProblem(`/v1/usage/ledger?cursor=${cursor}`, 400, 'bad_request');
        expect(body.detail).to.match(/cursor is not valid/);
      }
    });
  });

  describe('paths and methods', () => {
    it('says a malformed percent-encoded path is malformed (it said "request body is not valid JSON")', async () => {
      const body = await expectProblem('/v1/scores/%ZZ', 400, 'bad_request');
      expect(body.detail).to.equal('the path is not valid percent-encoded UTF-8');
    });

    it('does not let Unicode case mapping turn "ﬁ" or "ſ" into a real ticker', async () => {
      await expectProblem(`/v1/scores/${encodeURIComponent('ﬁ')}`, 404, 'not_found');
      await expectProblem(`/v1/scores/history?start=2019-06-10&tickers=${encodeURIComponent('ſ')}`, 400, 'bad_request');
    });

    it('answers HEAD and other methods on a /v1 path with 405 Allow: GET, charging nothing', async () => {
      for (const method of ['HEAD', 'POST', 'PUT', 'DELETE', 'PATCH']) {
        const before = await balance();
        const r = await call('/v1/screener?limit=650', { method });
        expect(r.status, method).to.equal(405);
        expect(r.allow, method).to.equal('GET');
        if (method !== 'HEAD') expect(JSON.parse(r.text)).to.include({ code: 'method_not_allowed', status: 405 });
        expect(await balance(), method).to.equal(before);
      }
      expect((await call('/v1/nowhere', { method: 'POST' })).status).to.equal(404);
    });

    it('answers what node refuses to parse with problem+json, not an empty body', async () => {
      const raw = (text: string) =>
        new Promise<string>((resolve, reject) => {
          const { port } = new URL(server.url);
          const socket = connect(Number(port), '127.0.0.1', () => socket.end(text));
          let out = '';
          socket.on('data', (d: Buffer) => (out += d.toString()));
          socket.on('end', () => resolve(out));
          socket.on('error', reject);
        });
      const bad = await raw('FOO /v1/usage HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(bad).to.match(/^HTTP\/1\.1 400 /).and.match(/Content-Type: application\/problem\+json/).and.match(/"code":"bad_request"/);
      const big = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const { port } = new URL(server.url);
        const req = request({ host: '127.0.0.1', port, path: '/v1/usage', headers: { 'X-API-Key': 'A'.repeat(20_000) } }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'] ?? '', body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(big.status).to.equal(431);
      expect(big.type).to.match(/^application\/problem\+json/);
      expect(JSON.parse(big.body)).to.include({ code: 'headers_too_large', status: 431 });
    });
  });

  describe('the MCP endpoint', () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      call('/mcp/http', { method: 'POST', body, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers } });
    const toolCall = (args: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'screen_stocks', arguments: args } });

    it('answers an unknown body encoding or charset with 415, not 500', async () => {
      await expectProblem('/mcp/http', 415, 'unsupported_media_type', {
        method: 'POST',
        body: toolCall({}),
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'foo', Accept: 'application/json, text/event-stream' },
      });
      const r = await post(toolCall({}), { 'Content-Type': 'application/json; charset=foo' });
      expect(r.status).to.equal(415);
      expect(JSON.parse(r.text)).to.include({ code: 'unsupported_media_type' });
    });

    it("answers a body that is not JSON with JSON-RPC's parse error, after the key check", async () => {
      const before = await balance();
      const r = await post('{"jsonrpc": "2.0", "id": 1, "method": "tools/li');
      expect(r.status).to.equal(400);
      expect(r.type).to.match(/^application\/json/);
      expect(JSON.parse(r.text)).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON' } });
      expect(r.credits, 'the balance, as on every authenticated response').to.equal(before);
      expect(await balance(), 'nothing charged').to.equal(before);
      // Without a key, the key is what is wrong: the body is not read.
      const anonymous = await fetch(`${server.url}/mcp/http`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{not json' });
      expect(anonymous.status).to.equal(401);
      expect(((await anonymous.json()) as { code: string }).code).to.equal('unauthorized');
    });

    it('answers arguments that are no object, or nest absurdly deep, with invalid params (not an internal error or a stack overflow)', async () => {
      const flat = await post(toolCall('limit=1'));
      expect(JSON.parse(flat.text)).to.deep.equal({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'params.arguments must be an object' } });
      let deep: unknown = 1;
      for (let i = 0; i < 2000; i++) deep = { a: deep };
      const nested = await post(toolCall({ limit: deep }));
      expect(JSON.parse(nested.text)).to.deep.equal({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'params.arguments nests deeper than 8 levels' } });
      // In a batch, the other calls are not run, and each request gets its answer.
      const batch = await post(`[${toolCall('x')},${JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list' })}]`);
      expect(JSON.parse(batch.text)).to.deep.equal([
        { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'params.arguments must be an object' } },
        { jsonrpc: '2.0', id: 8, error: { code: -32600, message: 'not run: another message of this batch is malformed' } },
      ]);
    });
  });
});
