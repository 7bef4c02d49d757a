import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';

/**
 * JSON-RPC 2.0 (https://www.jsonrpc.org/specification) on bad input at POST /mcp/http, over real
 * HTTP: each element of a batch answered on its own, notifications never answered, and one
 * content-type rule for the whole endpoint, checked after the key and before any JSON-RPC.
 */
describe('The MCP endpoint speaks JSON-RPC 2.0 on bad input', function () {
  this.timeout(120_000);
  let server: TestServer;
  let key = '';
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    key = demoKey(server.dir, 'quant');
  });
  after(() => server?.stop());

  const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  async function post(body: string, headers: Record<string, string> = {}, apiKey = key) {
    const r = await fetch(`${server.url}/mcp/http`, { method: 'POST', headers: { ...HEADERS, 'X-API-Key': apiKey, ...headers }, body });
    const text = await r.text();
    return { status: r.status, type: r.headers.get('content-type') ?? '', text, json: text ? JSON.parse(text) : undefined };
  }
  const getScores = (id: number | string, ticker = 'AAPL', params: Record<string, unknown> = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'get_scores', arguments: { ticker }, ...params },
  });
  const invalid = (id: number | string | null = null) => ({ jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response' } });
  const rest = async (path: string, apiKey = key) => (await getJson(`${server.url}${path}`, apiKey)).body;
  async function debits(accountId: string) {
    const events = (await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[];
    return events.flatMap(ledgerLines).flatMap((e) => (e.type === 'CreditsDebited' ? [e.data] : []));
  }
  async function newQuant(email: string) {
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email });
    await server.services.runner.waitForHead();
    return issued;
  }

  it('answers an empty batch with one Invalid Request error object (id null), not an array', async () => {
    const r = await post('[]');
    expect(r.status).to.equal(400);
    expect(r.type).to.match(/^application\/json/);
    expect(r.json).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: the batch is empty' } });
  });

  it('answers [1,2,3] with an array of three Invalid Request errors, one per element', async () => {
    const r = await post('[1,2,3]');
    expect(r.status).to.equal(200);
    expect(r.json).to.deep.equal([invalid(), invalid(), invalid()]);
  });

  it('runs the valid tools/call of a batch mixing junk with it, and answers each invalid element with Invalid Request, in one array', async () => {
    const k = await newQuant('jsonrpc-mixed@example.test');
    const batch = [
      { foo: 'boo' },
      getScores(1),
      42,
      { jsonrpc: '2.0', method: 1, params: 'bar' },
      { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: [1] },
    ];
    const r = await post(JSON.stringify(batch), {}, k.key);
    expect(r.status).to.equal(200);
    expect(r.json).to.have.length(5);
    expect(r.json[0]).to.deep.equal(invalid());
    expect(r.json[1]).to.include({ jsonrpc: '2.0', id: 1 });
    expect(r.json[1].result.isError).to.equal(undefined);
    expect(r.json[1].result.structuredContent).to.deep.equal(await rest('/v1/scores/AAPL', k.key));
    expect(r.json.slice(2)).to.deep.equal([invalid(), invalid(), invalid('x')]);
    // The call ran once, over MCP (the REST twin above is the other charge).
    expect((await debits(k.account_id)).map((d) => [d.endpoint, d.channel])).to.deep.equal([
      ['scores', 'mcp'],
      ['scores', 'rest'],
    ]);
  });

  it('answers a single invalid message with one Invalid Request error and HTTP 400, carrying its id when it has one', async () => {
    const bare = await post('1');
    expect(bare.status).to.equal(400);
    expect(bare.json).to.deep.equal(invalid());
    const withId = await post(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: 'x' }));
    expect(withId.status).to.equal(400);
    expect(withId.json).to.deep.equal(invalid(9));
  });

  it('gives a notification no answer: 202 without a body', async () => {
    const r = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    expect(r.status).to.equal(202);
    expect(r.text).to.equal('');
  });

  it('answers a batch of only notifications (and client responses) with 202 and no body', async () => {
    const batch = [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 5, result: {} },
    ];
    const r = await post(JSON.stringify(batch));
    expect(r.status).to.equal(202);
    expect(r.text).to.equal('');
  });

  it('leaves notifications out of a batch answer: a batch of one request is an array of one, even beside a cancellation of its id', async () => {
    const r = await post(JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } }, getScores(3)]));
    expect(r.status).to.equal(200);
    expect(r.json).to.be.an('array').with.length(1);
    expect(r.json[0].id).to.equal(3);
    expect(r.json[0].result.structuredContent).to.deep.equal(await rest('/v1/scores/AAPL'));
  });

  it('answers a batch of more than 10 messages with one Invalid Request error, running none', async () => {
    const k = await newQuant('jsonrpc-big@example.test');
    const r = await post(JSON.stringify(Array.from({ length: 11 }, (_, i) => getScores(i))), {}, k.key);
    expect(r.status).to.equal(400);
    expect(r.json).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: Batch must not exceed 10 messages' } });
    expect(await debits(k.account_id)).to.deep.equal([]);
  });

  it('answers Content-Type text/plain with a 415 unsupported_media_type problem, before any JSON-RPC', async () => {
    const r = await post(JSON.stringify(getScores(1)), { 'Content-Type': 'text/plain' });
    expect(r.status).to.equal(415);
    expect(r.type).to.match(/^application\/problem\+json/);
    expect(r.json).to.include({ status: 415, code: 'unsupported_media_type' });
    expect(r.json.detail).to.include('text/plain');
    const none = await fetch(`${server.url}/mcp/http`, { method: 'POST', headers: { Accept: HEADERS.Accept, 'X-API-Key': key }, body: new Blob(['{}']) });
    expect(none.status).to.equal(415);
    expect(((await none.json()) as { code: string }).code).to.equal('unsupported_media_type');
  });

  it('answers a charset other than UTF-8 with the same 415 problem, and reads UTF-8 however it is written', async () => {
    for (const type of ['application/json; charset=iso-8859-1', 'application/json; charset=utf-16', 'application/json; charset=foo']) {
      const r = await post(JSON.stringify(getScores(1)), { 'Content-Type': type });
      expect(r.status, type).to.equal(415);
      expect(r.type, type).to.match(/^application\/problem\+json/);
      expect(r.json, type).to.include({ status: 415, code: 'unsupported_media_type' });
    }
    for (const type of ['application/json; charset=utf-8', 'Application/JSON; Charset="UTF-8"', 'application/json;']) {
      const r = await post(JSON.stringify(getScores(1)), { 'Content-Type': type });
      expect(r.status, type).to.equal(200);
      expect(r.json.result.structuredContent.ticker, type).to.equal('AAPL');
    }
  });

  it('checks the key first: a 401 problem, whatever the media type or body', async () => {
    for (const [type, body] of [
      ['text/plain', 'hello'],
      ['application/json', '[]'],
      ['application/json', '{not json'],
    ]) {
      const r = await post(body!, { 'Content-Type': type! }, 'sk_live_nope');
      expect(r.status, body).to.equal(401);
      expect(r.type).to.match(/^application\/problem\+json/);
      expect(r.json.code).to.equal('unauthorized');
    }
  });

  it('answers concurrent requests that use the same id each with its own result (one server serves them all)', async () => {
    const tickers = ((await rest('/v1/coverage')).tickers as string[]).slice(0, 12);
    const answers = await Promise.all(tickers.map((t) => post(JSON.stringify(getScores(1, t)))));
    for (const [i, a] of answers.entries()) {
      expect(a.json.id).to.equal(1);
      expect(a.json.result.structuredContent.ticker).to.equal(tickers[i]);
    }
  });

  it("answers a plain tools/call exactly as the SDK's server does (its result, a tool error, an input error)", async () => {
    // `_meta` sends a call through the SDK's protocol layer; without it the dispatcher runs it.
    const viaSdk = { _meta: { note: 'through the SDK' } };
    const hobbyist = demoKey(server.dir, 'hobbyist');
    const pairs: [unknown, unknown, string][] = [
      [getScores(1), getScores(1, 'AAPL', viaSdk), key],
      [getScores(2, 'NOPE'), getScores(2, 'NOPE', viaSdk), key],
      [
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_upcoming_earnings', arguments: {} } },
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_upcoming_earnings', arguments: {}, ...viaSdk } },
        hobbyist,
      ],
      [
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get_scores', arguments: {} } },
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get_scores', arguments: {}, ...viaSdk } },
        key,
      ],
    ];
    for (const [direct, sdk, apiKey] of pairs) {
      const a = await post(JSON.stringify(direct), {}, apiKey);
      const b = await post(JSON.stringify(sdk), {}, apiKey);
      expect(a.status).to.equal(b.status);
      // The same bytes, but for the balance (the first call was charged before the second).
      const balance = /"credits_remaining":-?\d+/g;
      expect(a.text.replace(balance, '')).to.equal(b.text.replace(balance, ''));
    }
  });
});
