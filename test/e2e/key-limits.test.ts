/**
 * Keys that can do less (issue 46 item 4) and keys that stop (item 3's expiry), over real HTTP and
 * the real MCP client: a read-only key refused a webhook registration, a key limited to some
 * operations refused the others before anything is read or charged, an expired key refused, and
 * the API for the account's own keys (GET /v1/keys, PATCH /v1/keys/{key_id}) with who may use it.
 */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey, issueKey, type IssuedKey } from '../../commands/manage-keys/keys.handler.js';
import type { KeyLimitsChange } from '../../src/domain/accounts/key-limits.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { WEBHOOK_REGISTRY_STREAM } from '../../src/domain/webhooks/webhook.events.js';
import { startTestServer, wallClockPlus, type TestServer } from '../support/server.js';

const NOW = '2019-03-15T12:00:00Z';
type Json = Record<string, any>;

describe('Keys that can do less, and keys that expire', function () {
  this.timeout(120_000);
  let server: TestServer;
  /** The wall clock a key's expiry is on: real time, moved forward by hand. */
  const wall = wallClockPlus();
  let owner: IssuedKey;
  const clients: Client[] = [];

  before(async () => {
    server = await startTestServer({ now: NOW, transportClock: wall });
    owner = await createAccountWithKey(server.services, { tier: 'quant', name: 'owner' });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server?.stop();
  });

  const keyWith = async (limits: KeyLimitsChange, name = 'limited') => {
    const k = await issueKey(server.services, owner.account_id, name, limits);
    await server.services.runner.waitForHead();
    return k;
  };
  const call = async (method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'X-API-Key': key, ...headers, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: (text ? JSON.parse(text) : {}) as Json };
  };
  const mcp = async (key: string) => {
    const client = new Client({ name: 'key-limits-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
    clients.push(client);
    return client;
  };
  const tool = async (client: Client, name: string, args: Json = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const ledgerLength = async () => (await server.services.events.readStream(ledgerStream(owner.account_id))).length;

  describe('When a key is read-only', () => {
    let readOnly: IssuedKey;
    before(async () => {
      readOnly = await keyWith({ scope: 'read_only' });
    });

    it('is refused a webhook registration with 403 key_scope_forbidden, and nothing is registered', async () => {
      const registry = async () => (await server.services.events.readStream(WEBHOOK_REGISTRY_STREAM)).length;
      const before = await registry();
      const r = await call('POST', '/v1/webhooks', readOnly.key, { event_type: 'score_move', url: 'https://hooks.example.com/scores' });
      expect(r.status).to.equal(403);
      expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(r.body).to.include({ code: 'key_scope_forbidden', scope: 'read_only', operation: 'webhooks' });
      expect(r.body['operations']).to.equal(null);
      expect(await registry()).to.equal(before);
      expect((await call('GET', '/v1/webhooks', owner.key)).body['webhooks']).to.deep.equal([]);
      // The same registration with the account's unrestricted key goes through.
      expect((await call('POST', '/v1/webhooks', owner.key, { event_type: 'score_move', url: 'https://hooks.example.com/scores' })).status).to.equal(201);
    });

    it('is refused every other change (deleting a webhook, a key’s limits), and answered every read, REST and MCP', async () => {
      expect((await call('DELETE', '/v1/webhooks/1', readOnly.key)).body['code']).to.equal('key_scope_forbidden');
      expect((await call('PATCH', `/v1/keys/${readOnly.key_id}`, readOnly.key, { scope: 'all' })).body['code']).to.equal('key_scope_forbidden');
      for (const path of ['/v1/scores/AAPL', '/v1/webhooks', '/v1/usage', '/v1/usage/ledger', '/v1/keys']) expect((await call('GET', path, readOnly.key)).status, path).to.equal(200);
      expect((await tool(await mcp(readOnly.key), 'get_scores', { ticker: 'AAPL' })).isError).to.not.equal(true);
    });
  });

  describe('When a key may call only some operations', () => {
    let narrow: IssuedKey;
    before(async () => {
      // A rate-card key and an MCP tool's name: both name an operation.
      narrow = await keyWith({ operations: ['scores', 'get_usage'] });
      expect(narrow.limits.operations).to.deep.equal(['scores', 'usage']);
    });

    it('answers those, over REST and MCP', async () => {
      expect((await call('GET', '/v1/scores/AAPL', narrow.key)).status).to.equal(200);
      expect((await call('GET', '/v1/usage', narrow.key)).status).to.equal(200);
      const client = await mcp(narrow.key);
      expect((await tool(client, 'get_scores', { ticker: 'MSFT' })).isError).to.not.equal(true);
      expect((await tool(client, 'get_usage')).isError).to.not.equal(true);
    });

    it('refuses any other with 403 key_scope_forbidden before reading or charging anything, over REST and MCP', async () => {
      const before = await ledgerLength();
      const r = await call('GET', '/v1/screener', narrow.key);
      expect(r.status).to.equal(403);
      expect(r.body).to.deep.include({ code: 'key_scope_forbidden', scope: 'all', operations: ['scores', 'usage'], operation: 'screener' });
      const result = await tool(await mcp(narrow.key), 'get_score_history', { ticker: 'AAPL' });
      expect(result.isError).to.equal(true);
      expect(result.structuredContent).to.include({ code: 'key_scope_forbidden', operation: 'history', status: 403 });
      expect(await ledgerLength()).to.equal(before);
    });
  });

  describe('When a key has an expiry', () => {
    it('works until then, and is refused with 403 key_expired after it, REST and MCP (on the wall clock)', async () => {
      const expiring = await keyWith({ expires_at: new Date(wall.now().getTime() + 3_600_000).toISOString() });
      expect((await call('GET', '/v1/scores/AAPL', expiring.key)).status).to.equal(200);
      const client = await mcp(expiring.key);
      wall.advance(2 * 3_600_000);
      const r = await call('GET', '/v1/scores/AAPL', expiring.key);
      expect(r.status).to.equal(403);
      expect(r.body).to.include({ code: 'key_expired', expires_at: expiring.limits.expires_at });
      const refused = await client.callTool({ name: 'get_scores', arguments: { ticker: 'AAPL' } }).then(
        (result) => JSON.stringify(result),
        (err: unknown) => String(err),
      );
      expect(refused).to.include('key_expired');
      // The owner's key is not touched by it.
      expect((await call('GET', '/v1/scores/AAPL', owner.key)).status).to.equal(200);
    });

    it('cannot be given an expiry in the past (revoking stops a key now)', async () => {
      const r = await call('PATCH', `/v1/keys/${owner.key_id}`, owner.key, { expires_at: '2001-01-01T00:00:00Z' });
      expect(r.status).to.equal(400);
      expect(r.body['detail']).to.match(/must be in the future/);
    });
  });

  describe('The account’s keys over the API', () => {
    it('lists every key with its limits, spend today and this month, what it may still spend and its last use', async () => {
      const budgeted = await keyWith({ daily_credit_limit: 50, monthly_credit_limit: 1_000 }, 'budgeted');
      const first = await call('GET', '/v1/scores/AAPL', budgeted.key);
      expect(first.headers.get('x-key-budget-remaining')).to.equal('48');
      // The owner's key has no limit: no budget header.
      expect((await call('GET', '/v1/scores/AAPL', owner.key)).headers.get('x-key-budget-remaining')).to.equal(null);
      const listing = await call('GET', '/v1/keys', owner.key);
      expect(listing.status).to.equal(200);
      const row = (listing.body['keys'] as Json[]).find((k) => k['key_id'] === budgeted.key_id)!;
      expect(row).to.deep.include({ name: 'budgeted', status: 'active', current: false, daily_credit_limit: 50, monthly_credit_limit: 1_000, scope: 'all', operations: null, spent_today: 2, spent_this_month: 2, budget_remaining: 48 });
      expect(row['last_used_at']).to.be.a('string');
      expect((listing.body['keys'] as Json[]).find((k) => k['key_id'] === owner.key_id)).to.include({ current: true, budget_remaining: null });
    });

    it('changes a key’s limits with PATCH from an unrestricted key, in force at once: the next call over the new limit is refused', async () => {
      const agent = await keyWith({}, 'agent');
      expect((await call('GET', '/v1/scores/AAPL', agent.key)).status).to.equal(200);
      const set = await call('PATCH', `/v1/keys/${agent.key_id}`, owner.key, { daily_credit_limit: 3 });
      expect(set.status).to.equal(200);
      expect(set.body).to.deep.equal({ key_id: agent.key_id, changed: true, daily_credit_limit: 3, monthly_credit_limit: null, expires_at: null, scope: 'all', operations: null });
      expect((await call('PATCH', `/v1/keys/${agent.key_id}`, owner.key, { daily_credit_limit: 3 })).body['changed']).to.equal(false);
      // 2 spent before, 3 a day: the next call (2 more) is over the limit.
      const refused = await call('GET', '/v1/scores/AAPL', agent.key);
      expect(refused.status).to.equal(429);
      expect(refused.body).to.include({ code: 'key_budget_exhausted', key_id: agent.key_id, limit: 3, window: 'day', spent: 2, cost: 2 });
      expect(Number(refused.headers.get('retry-after'))).to.equal(12 * 3600);
      // null removes a limit: the key spends again.
      await call('PATCH', `/v1/keys/${agent.key_id}`, owner.key, { daily_credit_limit: null });
      expect((await call('GET', '/v1/scores/AAPL', agent.key)).status).to.equal(200);
    });

    it('prices a call by a dry run as its debit would be decided: what the key would have left, or key_budget_exhausted past its limit, charging nothing', async () => {
      const k = await keyWith({ daily_credit_limit: 3 }, 'dry-run');
      const dry = (path: string) => call('GET', path, k.key, undefined, { 'X-Dry-Run': 'true' });
      const before = await ledgerLength();
      const priced = await dry('/v1/scores/AAPL');
      expect(priced.status).to.equal(204);
      expect([priced.headers.get('x-credits-cost'), priced.headers.get('x-key-budget-remaining')]).to.deep.equal(['2', '1']);
      expect(await ledgerLength()).to.equal(before);
      expect((await call('GET', '/v1/scores/AAPL', k.key)).headers.get('x-key-budget-remaining')).to.equal('1');
      const refused = await dry('/v1/scores/MSFT');
      expect(refused.status).to.equal(429);
      expect(refused.body).to.include({ code: 'key_budget_exhausted', spent: 2, limit: 3, cost: 2 });
      const overMcp = await tool(await mcp(k.key), 'get_scores', { ticker: 'MSFT', dry_run: true });
      expect(overMcp.structuredContent).to.include({ code: 'key_budget_exhausted' });
      expect(await ledgerLength()).to.equal(before + 1);
    });

    it('refuses PATCH from a key with limits of its own (it could lift them), and for a key of another account', async () => {
      const bounded = await keyWith({ daily_credit_limit: 1_000 }, 'bounded');
      const own = await call('PATCH', `/v1/keys/${bounded.key_id}`, bounded.key, { daily_credit_limit: null });
      expect(own.status).to.equal(403);
      expect(own.body['code']).to.equal('key_scope_forbidden');
      const stranger = await createAccountWithKey(server.services, { tier: 'free' });
      await server.services.runner.waitForHead();
      expect((await call('PATCH', `/v1/keys/${stranger.key_id}`, owner.key, { daily_credit_limit: 5 })).status).to.equal(404);
      expect((await call('PATCH', `/v1/keys/${owner.key_id}`, owner.key, { daily_credit_limit: 0 })).status).to.equal(400);
      expect((await call('PATCH', `/v1/keys/${owner.key_id}`, owner.key, { operations: ['nonsense'] })).body['detail']).to.match(/Unknown operation "nonsense"/);
    });
  });
});
