import { expect } from 'chai';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { PLANS, RATE_BURST_FACTOR } from '../../src/domain/plans.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 28 item 1: every tool call of an MCP POST pays its own way. A POST holds one message, or
 * for a client of a protocol before 2025-06-18 a batch of at most 10; each request takes its own
 * rate-limit token (the same bucket as REST) and has its own request id on its ledger debit; a
 * batch's answer is bounded. Over real HTTP, as a client would send it.
 */
/** A JSON-RPC answer as the tests read it. */
type Answer = Record<string, any>;

describe('MCP POSTs pay per call: bounded batches, a rate-limit token and a request id per call', function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
  });
  after(() => server?.stop());

  const FREE_BURST = PLANS.free.rate_per_second * RATE_BURST_FACTOR;
  async function freeKey(email: string) {
    const issued = await createAccountWithKey(server.services, { tier: 'free', email });
    await server.services.runner.waitForHead();
    return issued;
  }
  const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const batchOf = (n: number, name: string, args: Record<string, unknown> = {}) => Array.from({ length: n }, (_, i) => call(i + 1, name, args));
  async function post(key: string, body: unknown, version?: string) {
    const r = await fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'X-API-Key': key,
        ...(version ? { 'MCP-Protocol-Version': version } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, requestId: r.headers.get('x-request-id'), bytes: Buffer.byteLength(text), json: JSON.parse(text) as Answer & Answer[] };
  }
  async function debits(accountId: string) {
    const events = (await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[];
    return events.flatMap(ledgerLines).flatMap((e) => (e.type === 'CreditsDebited' ? [e.data] : []));
  }
  /** The answers of several POSTs' batches, split into served results and refusals by code. */
  function tally(answers: Answer[]) {
    const served = answers.filter((a) => a.result && !a.result.isError);
    const refused = answers.filter((a) => a.result?.isError).map((a) => a.result.structuredContent.code as string);
    return { served, refused };
  }

  it("refuses a free key's POST of 60 get_track_record calls whole, from a 2025-06-18 client and from an older one, running none", async () => {
    const k = await freeKey('batch-60@example.test');
    for (const version of ['2025-06-18', '2025-11-25', '2025-03-26', undefined]) {
      const r = await post(k.key, batchOf(60, 'get_track_record'), version);
      expect(r.status, version).to.equal(400);
      expect(r.json, version).to.not.be.an('array');
      expect(r.json.error.code, version).to.equal(-32600);
      expect(r.json.error.message, version).to.match(version && version >= '2025-06-18' ? /no JSON-RPC batches/ : /Batch must not exceed 10 messages/);
      expect(r.bytes, version).to.be.below(512);
    }
    // A 2025-06-18 client has no batches at all, however small; one message a POST is served.
    const two = await post(k.key, batchOf(2, 'get_track_record'), '2025-06-18');
    expect(two.status).to.equal(400);
    expect(two.json.error.code).to.equal(-32600);
    const one = await post(k.key, call(1, 'get_track_record'), '2025-06-18');
    expect(one.status).to.equal(200);
    expect(one.json.result.structuredContent.closed_trades).to.be.a('number');
  });

  it('refuses a batch from a client naming a protocol version it does not speak, also behind an initialize, running none', async () => {
    const k = await freeKey('batch-version@example.test');
    const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    for (const version of ['2099-01-01', '2025-03-27', 'latest']) {
      const r = await post(k.key, [initialize, call(1, 'get_scores', { ticker: 'AAPL' }), call(2, 'get_track_record')], version);
      expect(r.status, version).to.equal(400);
      expect(r.json, version).to.not.be.an('array');
      expect(r.json.error.code, version).to.equal(-32600);
      expect(r.json.error.message, version).to.contain(`MCP-Protocol-Version ${version} is not supported`);
    }
    expect(await debits(k.account_id)).to.deep.equal([]);
  });

  it('serves at most the burst of six concurrent batches of 10 get_track_record calls, refusing the rest with rate_limited, each answer bounded', async () => {
    const k = await freeKey('batch-track@example.test');
    const single = await post(k.key, call(1, 'get_track_record'));
    const oneAnswer = single.bytes;
    await new Promise((r) => setTimeout(r, 300)); // the token the probe took is back
    const started = performance.now();
    const posts = await Promise.all(Array.from({ length: 6 }, () => post(k.key, batchOf(10, 'get_track_record'))));
    const seconds = (performance.now() - started) / 1000;
    const answers = posts.flatMap((p) => (p.status === 200 ? (p.json as Answer[]) : []));
    const limitedPosts = posts.filter((p) => p.status === 429);
    const { served, refused } = tally(answers);
    // The bucket holds the burst and refills at the rate while the POSTs are answered.
    expect(served.length).to.be.at.least(1);
    expect(served.length).to.be.at.most(FREE_BURST + Math.floor(PLANS.free.rate_per_second * seconds));
    expect(served.length + refused.length + limitedPosts.length * 10).to.equal(60);
    expect(refused.every((c) => c === 'rate_limited')).to.equal(true);
    expect(refused.length + limitedPosts.length * 10).to.be.at.least(60 - FREE_BURST - Math.floor(PLANS.free.rate_per_second * seconds));
    for (const a of answers.filter((x) => x.result?.isError)) {
      expect(a.result.structuredContent).to.include({ status: 429, code: 'rate_limited' });
      expect(a.result.structuredContent.retry_after_seconds).to.be.a('number');
      expect(JSON.parse(a.result.content[0].text)).to.deep.equal(a.result.structuredContent);
    }
    // No POST's answer is more than its ten answers: nothing is held beyond what the calls return.
    for (const p of posts) expect(p.bytes).to.be.at.most(10 * oneAnswer + 64);
  });

  it('gives every served call of a batch its own request id on its ledger debit (the first the POST\'s), and refused calls none', async () => {
    const k = await freeKey('batch-ids@example.test');
    const posts = await Promise.all(Array.from({ length: 6 }, () => post(k.key, batchOf(10, 'get_scores', { ticker: 'AAPL' }))));
    const answers = posts.flatMap((p) => (p.status === 200 ? (p.json as Answer[]) : []));
    const { served, refused } = tally(answers);
    expect(served.length).to.be.at.least(2);
    expect(served.length).to.be.at.most(FREE_BURST + 10);
    expect(refused.every((c) => c === 'rate_limited')).to.equal(true);
    expect(served.length + refused.length + posts.filter((p) => p.status === 429).length * 10).to.equal(60);
    const lines = await debits(k.account_id);
    // One debit per served call, each under a request id of its own.
    expect(lines.map((d) => [d.endpoint, d.channel])).to.deep.equal(served.map(() => ['scores', 'mcp']));
    expect(new Set(lines.map((d) => d.request_id)).size).to.equal(served.length);
    // The first call of each admitted POST is charged under the POST's X-Request-Id.
    const ids = new Set(lines.map((d) => d.request_id));
    for (const p of posts.filter((x) => x.status === 200 && x.json[0]!.result && !x.json[0]!.result.isError)) expect(ids.has(p.requestId!), p.requestId!).to.equal(true);
  });

  it('takes a token for every request of a batch, tools/list and ping included, from the same bucket as REST', async () => {
    const k = await freeKey('batch-rest@example.test');
    // One request a second, bursts of two: what the POST and REST take is countable.
    await setRateLimit(server.services, k.account_id, 1);
    await server.services.runner.waitForHead();
    const rest = await fetch(`${server.url}/v1/track-record`, { headers: { 'X-API-Key': k.key } });
    await rest.arrayBuffer();
    expect(rest.status).to.equal(200);
    const r = await post(k.key, [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, call(3, 'get_track_record'), call(4, 'get_track_record')]);
    expect(r.status).to.equal(200);
    const answers: Answer[] = r.json;
    expect(answers.map((a): unknown => a.id)).to.deep.equal([1, 2, 3, 4]);
    expect(answers[0]!.result).to.deep.equal({});
    const refused = answers.slice(1).filter((a) => a.error || a.result.isError);
    // The POST's token paid for the ping; the bucket (REST took the other) refills one a second.
    expect(refused.length).to.be.at.least(2);
    for (const a of refused) {
      const problem = a.error ? a.error.data : a.result.structuredContent;
      expect(problem).to.include({ code: 'rate_limited', status: 429 });
      if (a.error) expect(a.error).to.include({ code: -32000 }).and.have.property('message').that.match(/^rate_limited: /);
    }
    // A refused tools/list is a JSON-RPC error (no tool ran), a refused tool call a tool error.
    if (answers[1]!.error) expect(answers[1]!.error.data.code).to.equal('rate_limited');
    expect(answers.slice(2).every((a) => 'result' in a)).to.equal(true);
  });

  it('stops running a batch once its answers hold 8 MiB: later calls are refused unrun (limit_exceeded) and charged nothing', async () => {
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email: 'batch-bytes@example.test' });
    await server.services.runner.waitForHead();
    // The whole history of every ticker: some 12 MB of JSON, sent twice in a result (structured and as text).
    const wide = { start: '2010-01-01' };
    const r = await post(issued.key, batchOf(3, 'get_multi_ticker_history', wide));
    expect(r.status).to.equal(200);
    const [first, ...later] = r.json as any[];
    expect(first.result.isError).to.equal(undefined);
    expect(first.result.structuredContent.rows.length).to.be.greaterThan(10_000);
    for (const a of later) {
      expect(a.result.isError).to.equal(true);
      expect(a.result.structuredContent).to.include({ code: 'limit_exceeded', status: 422, maximum: 8 * 1024 * 1024 });
    }
    // The answer is the one served call's and two short refusals; one charge.
    expect(r.bytes).to.be.below(Buffer.byteLength(JSON.stringify(first)) + 4096);
    expect((await debits(issued.account_id)).map((d) => d.endpoint)).to.deep.equal(['multi_history']);
  });
});
