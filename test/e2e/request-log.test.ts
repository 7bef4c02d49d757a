/**
 * The request log over real HTTP and the real MCP client (issue 47, item 1): every call of an
 * account's keys, answered or refused, in GET /v1/requests newest first, paged and filtered,
 * never another account's; MCP calls with channel mcp; kept across a graceful restart (the buffer
 * is written on stop, not by its timer, which the test sets to an hour); pruned after 30 days on
 * an injected wall clock (the prune is run by the test, never raced); gone with a forgotten account.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey, issueKey, setRateLimit, type IssuedKey } from '../../commands/manage-keys/keys.handler.js';
import { forgetAccount } from '../../src/app/forget-account.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { getJson, startTestServer, tempDir, wallClockPlus, type TestServer } from '../support/server.js';

const NOW = '2019-06-14T12:00:00Z';
const DAY_MS = 86_400_000;

interface Entry {
  request_id: string;
  at: string;
  key_name: string;
  key_prefix: string;
  channel: string;
  operation: string | null;
  tool: string | null;
  method: string;
  path: string;
  status: number;
  code: string | null;
  credits: number;
  latency_ms: number;
}
interface Page {
  requests: Entry[];
  next_cursor: string | null;
  count: number;
  kept_days: number;
}

describe('The request log: GET /v1/requests and get_request_log', function () {
  this.timeout(180_000);
  const dir = tempDir('request-log-');
  const wall = wallClockPlus();
  let server: TestServer;
  let a: IssuedKey;
  let a2: IssuedKey;
  let b: IssuedKey;
  const clients: Client[] = [];
  /** A's calls as the test made them, oldest first: request id, status, problem code, credits. */
  const made: { id: string; status: number; code: string | null; path: string }[] = [];

  const start = () => startTestServer({ now: NOW, dir, transportClock: wall, requestLogFlushMs: 3_600_000 });
  const log = async (key: string, query = ''): Promise<Page> => {
    const r = await getJson(`${server.url}/v1/requests${query}`, key);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body as Page;
  };
  /** A's own listing without its own reads of the log. */
  const calls = async (key: string, query = '') => (await log(key, query)).requests.filter((e) => e.operation !== 'requests');
  async function call(key: string, path: string): Promise<{ id: string; status: number; code: string | null }> {
    const r = await getJson(`${server.url}${path}`, key);
    const id = r.headers.get('x-request-id')!;
    const code = r.status >= 400 ? (r.body['code'] as string) : null;
    if (key === a.key || key === a2.key) made.push({ id, status: r.status, code, path });
    return { id, status: r.status, code };
  }
  async function mcp(key: string): Promise<Client> {
    const client = new Client({ name: 'request-log-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
    clients.push(client);
    return client;
  }

  before(async () => {
    server = await start();
    a = await createAccountWithKey(server.services, { tier: 'free', name: 'laptop' });
    a2 = await issueKey(server.services, a.account_id, 'nightly job');
    b = await createAccountWithKey(server.services, { tier: 'quant', name: 'other account' });
    // The listings below would run a free account over its 10 calls a second.
    await setRateLimit(server.services, a.account_id, 'unlimited');
    await server.services.runner.waitForHead();
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists my calls newest first, answered and refused alike (tier, not found, bad input), each with its key, operation, status or code, credits and request id', async () => {
    expect((await call(a.key, '/v1/scores/AAPL')).status).to.equal(200);
    expect(await call(a.key, '/v1/divergence/open')).to.include({ status: 403, code: 'tier' });
    expect(await call(a.key, '/v1/scores/ZZZZZ')).to.include({ status: 404, code: 'not_found' });
    expect(await call(a2.key, '/v1/screener?limit=abc')).to.include({ status: 400, code: 'bad_request' });
    const other = await call(b.key, '/v1/scores/MSFT');

    const listed = await calls(a.key);
    expect(listed.map((e) => e.request_id)).to.deep.equal(made.map((m) => m.id).reverse());
    expect(listed.map((e) => [e.status, e.code])).to.deep.equal(made.map((m) => [m.status, m.code]).reverse());
    const ats = listed.map((e) => Date.parse(e.at));
    expect(ats).to.deep.equal([...ats].sort((x, y) => y - x));
    const [bad, missing, tier, answered] = listed as [Entry, Entry, Entry, Entry];
    expect(answered).to.include({ channel: 'rest', operation: 'scores', tool: null, method: 'GET', path: '/v1/scores/{ticker}', credits: 2, key_name: 'laptop', key_prefix: a.prefix });
    // A key is named by its name and prefix, as on the account page: no /v1 answer shows a key id.
    expect(JSON.stringify(listed)).to.not.include(a.key_id);
    expect(tier).to.include({ operation: 'divergence_open', path: '/v1/divergence/open', credits: 0, code: 'tier' });
    expect(missing).to.include({ operation: 'scores', credits: 0, code: 'not_found' });
    expect(bad).to.include({ operation: 'screener', key_name: 'nightly job', key_prefix: a2.prefix, credits: 0 });
    for (const e of listed) expect(e.latency_ms).to.be.a('number').and.at.least(0);
    // One account never sees another's calls.
    expect(listed.map((e) => e.request_id)).to.not.include(other.id);
    const theirs = await calls(b.key);
    expect(theirs.map((e) => e.request_id)).to.deep.equal([other.id]);
  });

  it('records a refusal over the rate limit (429 rate_limited) with its request id', async () => {
    await setRateLimit(server.services, a.account_id, 1);
    await server.services.runner.waitForHead();
    const burst = await Promise.all(Array.from({ length: 6 }, () => call(a.key, '/v1/scores/MSFT')));
    const limited = burst.filter((r) => r.status === 429);
    expect(limited.length, 'burst of 6 over a bucket of 2').to.be.at.least(3);
    await setRateLimit(server.services, a.account_id, 'unlimited');
    await server.services.runner.waitForHead();
    const refused = await calls(a.key, '?status=4xx&operation=scores&limit=500');
    for (const l of limited) expect(refused.find((e) => e.request_id === l.id), l.id).to.include({ status: 429, code: 'rate_limited', credits: 0 });
  });

  it('pages with a cursor and filters by status class, operation, key, request id and day; a malformed filter is a 400 naming it', async () => {
    const whole = await calls(a.key, '?limit=500');
    const pages: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await log(a.key, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.count).to.be.at.most(3);
      pages.push(...page.requests);
      cursor = page.next_cursor;
    } while (cursor);
    // Paging saw every call once, in order (its own reads of the log, made meanwhile, are newer than the first page).
    const paged = pages.filter((e) => e.operation !== 'requests');
    expect(paged.map((e) => e.request_id)).to.deep.equal(whole.map((e) => e.request_id));
    expect(new Set(pages.map((e) => e.request_id)).size).to.equal(pages.length);

    expect((await calls(a.key, '?status=2xx&limit=500')).every((e) => e.status < 300)).to.equal(true);
    const refused = await calls(a.key, '?status=4xx&limit=500');
    expect(refused.length).to.be.greaterThan(3);
    expect(refused.every((e) => e.status >= 400 && e.status < 500 && e.code !== null)).to.equal(true);
    expect((await calls(a.key, '?operation=screener')).map((e) => e.request_id)).to.deep.equal([made.find((m) => m.path.startsWith('/v1/screener'))!.id]);
    const second = await calls(a.key, `?key=${a2.prefix}`);
    expect(second.length).to.be.greaterThan(0);
    expect(second.every((e) => e.key_prefix === a2.prefix)).to.equal(true);
    expect(await calls(a.key, `?key=${b.prefix}`), "another account's key").to.deep.equal([]);
    const tier = made.find((m) => m.code === 'tier')!;
    const one = await log(a.key, `?request_id=${tier.id}`);
    expect(one.requests.map((e) => [e.request_id, e.code])).to.deep.equal([[tier.id, 'tier']]);
    expect((await log(b.key, `?request_id=${tier.id}`)).requests, "another account's call by its id").to.deep.equal([]);
    const day = whole[0]!.at.slice(0, 10);
    expect((await calls(a.key, `?day=${day}&limit=500`)).length).to.equal(whole.filter((e) => e.at.startsWith(day)).length);
    expect(await calls(a.key, '?day=2000-01-01')).to.deep.equal([]);

    for (const [query, parameter] of [['?status=6xx', 'status'], ['?operation=nope', 'operation'], ['?day=2024-02-30', 'day'], ['?request_id=abc', 'request_id'], ['?cursor=xyz', 'cursor'], ['?limit=0', 'limit'], [`?key=${a.key_id}`, 'key']] as const) {
      const r = await getJson(`${server.url}/v1/requests${query}`, a.key);
      expect(r.status, query).to.equal(400);
      expect(r.body['errors'][0].parameter, query).to.equal(parameter);
    }
    expect((await getJson(`${server.url}/v1/requests?limit=501`, a.key)).status).to.equal(422);
  });

  it('records MCP tool calls with channel mcp and the tool, the charged one under the request id its ledger entry names; get_request_log answers as REST does', async () => {
    const client = await mcp(a.key);
    const answered = (await client.callTool({ name: 'get_scores', arguments: { ticker: 'AAPL' } })) as CallToolResult;
    expect(answered.isError ?? false).to.equal(false);
    const refused = (await client.callTool({ name: 'get_open_divergences', arguments: {} })) as CallToolResult;
    expect(refused.isError).to.equal(true);
    const viaMcp = await calls(a.key, '?limit=2');
    expect(viaMcp.map((e) => [e.channel, e.tool, e.operation, e.status, e.code, e.credits, e.method, e.path])).to.deep.equal([
      ['mcp', 'get_open_divergences', 'divergence_open', 403, 'tier', 0, 'POST', '/mcp/http'],
      ['mcp', 'get_scores', 'scores', 200, null, 2, 'POST', '/mcp/http'],
    ]);
    const debits = ((await server.services.events.readStream(ledgerStream(a.account_id))) as unknown as LedgerEvent[]).flatMap(ledgerLines).flatMap((e) => (e.type === 'CreditsDebited' ? [e.data] : []));
    expect(debits.at(-1)).to.include({ request_id: viaMcp[1]!.request_id, channel: 'mcp', cost: 2 });

    const tool = (await client.callTool({ name: 'get_request_log', arguments: { operation: 'scores', status: '2xx', limit: '2' } })) as CallToolResult;
    const rest = await log(a.key, '?operation=scores&status=2xx&limit=2');
    expect((tool.structuredContent as unknown as Page).requests).to.deep.equal(rest.requests);
  });

  it('keeps the calls across a graceful restart: the buffer, not yet written by its timer, is written on stop', async () => {
    const last = await call(a.key, '/v1/scores/AAPL');
    expect(server.services.requestLog.pending, 'the call waits in the buffer (its timer runs hourly here)').to.be.greaterThan(0);
    await server.stop();
    server = await start();
    const found = await log(a.key, `?request_id=${last.id}`);
    expect(found.requests.map((e) => [e.request_id, e.status, e.credits])).to.deep.equal([[last.id, 200, 2]]);
  });

  it('shows 30 days and prunes what is older, on the injected wall clock', async () => {
    const kept = await calls(a.key, '?limit=500');
    expect(kept.length).to.be.greaterThan(5);
    wall.advance(29 * DAY_MS);
    expect(await server.services.requestLog.prune(), 'nothing is 30 days old yet').to.equal(0);
    expect((await calls(a.key, '?limit=500')).length).to.equal(kept.length);
    wall.advance(2 * DAY_MS);
    const fresh = await call(a.key, '/v1/scores/AAPL');
    expect((await calls(a.key, '?limit=500')).map((e) => e.request_id), 'older calls are no longer shown').to.deep.equal([fresh.id]);
    const rows = (await server.services.requestLog.size()).rows;
    const pruned = await server.services.requestLog.prune();
    expect(pruned).to.be.at.least(kept.length);
    expect((await server.services.requestLog.size()).rows).to.equal(rows - pruned);
    // Deleted, not hidden: with the clock back where the calls were made, they are gone.
    wall.advance(-31 * DAY_MS);
    expect((await calls(a.key, '?limit=500')).map((e) => e.request_id)).to.deep.equal([fresh.id]);
  });

  it("deletes a forgotten account's calls, and only its", async () => {
    await call(a.key, '/v1/scores/AAPL');
    await call(b.key, '/v1/scores/AAPL');
    const forgotten = await forgetAccount(server.services, a.account_id);
    expect(forgotten.requests_deleted).to.be.at.least(2);
    expect(await server.services.requestLog.list({ account_id: a.account_id, limit: 100 })).to.deep.equal([]);
    expect((await calls(b.key)).length).to.be.greaterThan(0);
    // Its keys are revoked: once the revocation is in force (the key events projected, as
    // forget-account.test.ts waits for), a call is refused at authentication, and nothing is logged for the account again.
    await server.services.runner.waitForHead();
    expect((await getJson(`${server.url}/v1/scores/AAPL`, a.key)).status).to.equal(403);
    expect(await server.services.requestLog.list({ account_id: a.account_id, limit: 100 })).to.deep.equal([]);
  });
});
