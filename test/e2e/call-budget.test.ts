import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { entitlementsOf, type Tier } from '../../src/domain/plans.js';
import { CountingReadStore } from '../support/counting-read-store.js';
import { startTestServer, type TestServer } from '../support/server.js';

type Json = Record<string, unknown>;

/** A new builder account's balance: its monthly allowance. */
const BUILDER = entitlementsOf('builder', false).credits!;

/**
 * Issue 46, items 1 and 2: a price before the call (`X-Dry-Run: true`, MCP `dry_run`) and a cap
 * on each call (`X-Max-Credits`, MCP `max_credits`). A dry run is checked as the call would be and
 * charges nothing; the real call then charges exactly what it said. A call over its cap is refused
 * 403 `cost_exceeds_max`, charged nothing, and a row-priced one reads no rows to find out (a
 * counting wrapper around the read store counts what it read).
 */
describe('Call budgets: a price before the call and a cap on each call, REST and MCP', function () {
  this.timeout(180_000);
  let server: TestServer;
  let counter: CountingReadStore;
  const clients: Client[] = [];

  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    counter = new CountingReadStore(server.services.queries.reads);
    server.services.queries.reads = counter;
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server?.stop();
  });

  let accounts = 0;
  async function newKey(tier: Tier) {
    const issued = await createAccountWithKey(server.services, { tier, email: `budget-${++accounts}@example.test` });
    await server.services.runner.waitForHead();
    return issued;
  }
  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'call-budget-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
    clients.push(client);
    return client;
  }
  const debits = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited');
  const spent = async (accountId: string) => (await debits(accountId)).reduce((sum, d) => sum + (d.data as { cost: number }).cost, 0);
  async function get(path: string, key: string, headers: Record<string, string> = {}) {
    const r = await fetch(`${server.url}${path}`, { headers: { 'X-API-Key': key, ...headers } });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? (JSON.parse(text) as Json) : null };
  }
  const call = async (client: Client, name: string, args: Json) => (await client.callTool({ name, arguments: args })) as CallToolResult;

  describe('a dry run', () => {
    const cases = [
      { what: 'fixed-price', path: '/v1/scores/AAPL', tool: 'get_scores', args: { ticker: 'AAPL' }, expected: 2 },
      { what: 'row-priced', path: '/v1/scores/AAPL/history?start=2019-05-01&end=2019-05-31', tool: 'get_score_history', args: { ticker: 'AAPL', start: '2019-05-01', end: '2019-05-31' }, expected: null },
    ];
    for (const c of cases) {
      it(`over REST prices a ${c.what} call (204, X-Credits-Cost) without charging it, and the real call then charges that price`, async () => {
        const k = await newKey('builder');
        const dry = await get(c.path, k.key, { 'X-Dry-Run': 'true' });
        expect(dry.status).to.equal(204);
        expect(dry.body).to.equal(null);
        const cost = Number(dry.headers.get('x-credits-cost'));
        if (c.expected !== null) expect(cost).to.equal(c.expected);
        else expect(cost).to.be.above(10);
        expect(dry.headers.get('x-credits-remaining')).to.equal(String(BUILDER));
        expect(await debits(k.account_id)).to.have.length(0);

        const real = await get(c.path, k.key);
        expect(real.status).to.equal(200);
        expect(Number(real.headers.get('x-credits-cost'))).to.equal(cost);
        expect(await spent(k.account_id)).to.equal(cost);
        expect(Number(real.headers.get('x-credits-remaining'))).to.equal(BUILDER - cost);
      });

      it(`over MCP prices a ${c.what} call (dry_run) without charging it, and the real call then charges that price`, async () => {
        const k = await newKey('builder');
        const client = await connect(k.key);
        const dry = await call(client, c.tool, { ...c.args, dry_run: true });
        expect(dry.isError).to.not.equal(true);
        const priced = dry.structuredContent as { dry_run: boolean; cost: number; credits_remaining: number };
        expect(priced).to.include({ dry_run: true, credits_remaining: BUILDER });
        expect(dry._meta).to.deep.equal({ credits_remaining: BUILDER });
        expect(await debits(k.account_id)).to.have.length(0);

        const real = await call(client, c.tool, c.args);
        expect(real.isError).to.not.equal(true);
        expect(await spent(k.account_id)).to.equal(priced.cost);
        expect(real._meta).to.deep.equal({ credits_remaining: BUILDER - priced.cost });
      });
    }

    it('gives the refusal the call would get, charging nothing: a plan too low, and credits that do not cover it (with the cost)', async () => {
      const free = await newKey('free');
      const tier = await get('/v1/earnings', free.key, { 'X-Dry-Run': 'true' });
      expect(tier.status).to.equal(403);
      expect(tier.body).to.include({ code: 'tier', required_tier: 'builder' });
      // The free plan's 1,000 credits do not cover 90 days of 100 stocks' rows.
      const broad = await get('/v1/scores/history', free.key, { 'X-Dry-Run': 'true' });
      expect(broad.status).to.equal(429);
      expect(broad.body).to.include({ code: 'credits_exhausted', credits_remaining: 1000 });
      const cost = (broad.body as { cost: number }).cost;
      expect(cost).to.be.above(1000);
      const real = await get('/v1/scores/history', free.key);
      expect(real.status).to.equal(429);
      expect(real.body).to.include({ code: 'credits_exhausted', cost });

      const client = await connect(free.key);
      const mcp = await call(client, 'get_multi_ticker_history', { dry_run: true });
      expect(mcp.isError).to.equal(true);
      expect(mcp.structuredContent).to.include({ code: 'credits_exhausted', cost });
      expect(await debits(free.account_id)).to.have.length(0);
    });

    it('runs nothing on a write: X-Dry-Run on POST /v1/webhooks is a 400 and registers nothing', async () => {
      const k = await newKey('quant');
      const r = await fetch(`${server.url}/v1/webhooks`, {
        method: 'POST',
        headers: { 'X-API-Key': k.key, 'X-Dry-Run': 'true', 'Content-Type': 'application/json' },
        body: JSON.stringify({ event_type: 'score_move', url: 'https://127.0.0.1:9/hooks' }),
      });
      expect(r.status).to.equal(400);
      const list = await get('/v1/webhooks', k.key);
      expect(list.body).to.deep.include({ webhooks: [] });
    });
  });

  describe('a cap on each call', () => {
    it('refuses a fixed-price call over X-Max-Credits with 403 cost_exceeds_max (cost and maximum), charging and reading nothing', async () => {
      const k = await newKey('builder');
      const reads = await counter.during(async () => {
        const r = await get('/v1/scores/AAPL', k.key, { 'X-Max-Credits': '1' });
        expect(r.status).to.equal(403);
        expect(r.body).to.include({ code: 'cost_exceeds_max', max_credits: 1, cost: 2 });
      });
      expect(reads.filter((r) => r.docs > 0 && !['api_keys', 'accounts'].includes(r.collection))).to.deep.equal([]);
      const ok = await get('/v1/scores/AAPL', k.key, { 'X-Max-Credits': '2' });
      expect(ok.status).to.equal(200);
      expect(await spent(k.account_id)).to.equal(2);
    });

    it('refuses the whole universe’s history under a small cap before reading a row, over REST and MCP', async () => {
      const k = await newKey('quant');
      const client = await connect(k.key);
      const reads = await counter.during(async () => {
        const r = await get('/v1/scores/history', k.key, { 'X-Max-Credits': '10' });
        expect(r.status).to.equal(403);
        expect(r.body).to.include({ code: 'cost_exceeds_max', max_credits: 10, cost_at_least: 11 });
        const mcp = await call(client, 'get_multi_ticker_history', { max_credits: 10 });
        expect(mcp.isError).to.equal(true);
        expect(mcp.structuredContent).to.include({ code: 'cost_exceeds_max', max_credits: 10, cost_at_least: 11 });
      });
      const history = reads.filter((r) => r.collection === 'score_history');
      expect(history.filter((r) => r.op !== 'count' && r.docs > 0), 'history buckets read').to.deep.equal([]);
      expect(await debits(k.account_id)).to.have.length(0);
    });

    it('stops a row-priced read one bucket read past the cap when the cheap count cannot tell, and answers one within it', async () => {
      const k = await newKey('quant');
      // One ticker, one month: no month lies wholly inside the window, so only the read can tell.
      const path = '/v1/scores/history?tickers=AAPL&start=2019-05-01&end=2019-05-31';
      const priced = await get(path, k.key, { 'X-Dry-Run': 'true' });
      const cost = Number(priced.headers.get('x-credits-cost'));
      expect(cost).to.be.above(5);
      const over = await get(path, k.key, { 'X-Max-Credits': String(cost - 1) });
      expect(over.status).to.equal(403);
      expect(over.body).to.include({ code: 'cost_exceeds_max', max_credits: cost - 1, cost_at_least: cost });
      const within = await get(path, k.key, { 'X-Max-Credits': String(cost) });
      expect(within.status).to.equal(200);
      expect(within.body).to.include({ count: cost });
      expect(await spent(k.account_id)).to.equal(cost);
    });

    it('refuses a maximum or a dry run it cannot read with a 400 naming it, charging nothing', async () => {
      const k = await newKey('builder');
      for (const [name, value] of [['X-Max-Credits', '-1'], ['X-Max-Credits', 'ten'], ['X-Max-Credits', '1.5'], ['X-Dry-Run', 'yes']] as const) {
        const r = await get('/v1/scores/AAPL', k.key, { [name]: value });
        expect(r.status, `${name}: ${value}`).to.equal(400);
        expect(JSON.stringify(r.body)).to.include(name);
      }
      const client = await connect(k.key);
      const mcp = await call(client, 'get_scores', { ticker: 'AAPL', max_credits: 'lots' });
      expect(mcp.structuredContent).to.include({ code: 'bad_request' });
      expect(await debits(k.account_id)).to.have.length(0);
    });
  });

  it('declares both in the contract: X-Max-Credits and its 403 on every priced read in /openapi.json, the dry run at its root, the arguments in every tool', async () => {
    type Doc = { paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: Json }>>; 'x-dry-run': { parameter: { name: string }; status: number } };
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Doc;
    const score = doc.paths['/v1/scores/{ticker}']!['get']!;
    expect(score.parameters!.map((p) => p.name)).to.include('X-Max-Credits');
    expect(JSON.stringify(score.responses['403'])).to.include('cost_exceeds_max');
    expect(doc['x-dry-run']).to.deep.include({ status: 204 });
    expect(doc['x-dry-run'].parameter.name).to.equal('X-Dry-Run');
    const k = await newKey('builder');
    const client = await connect(k.key);
    const { tools } = await client.listTools();
    for (const tool of tools) expect(Object.keys(tool.inputSchema.properties ?? {}), tool.name).to.include.members(['dry_run', 'max_credits']);
  });
});
