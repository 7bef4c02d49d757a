import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey, revokeKey } from '../../commands/manage-keys/keys.handler.js';
import { registerWebhook } from '../../commands/manage-webhooks/webhooks.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { demoKey, getJson, startTestServer, type TestServer } from '../support/server.js';
import type { Tier } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS, describeCost } from '../../src/domain/rate-card.js';
import { trackRecordText } from '../../src/app/mcp/tools/get-track-record.tool.js';

/** The spec's eight tools, by the spec's names. */
const SPEC_TOOLS = [
  'get_dataset_info',
  'get_divergence_events',
  'get_divergences',
  'get_score_history',
  'get_scores',
  'get_track_record',
  'get_upcoming_earnings',
  'screen_stocks',
];

/** Every other read of the API. */
const MORE_TOOLS = [
  'get_coverage',
  'get_multi_ticker_history',
  'get_open_divergences',
  'get_signals',
  'get_social_heat',
  'get_theme',
  'get_usage',
  'get_usage_ledger',
  'get_request_log',
  'list_bulk_exports',
  'list_themes',
  'list_webhooks',
];

const TOOL_NAMES = [...SPEC_TOOLS, ...MORE_TOOLS].sort();

/**
 * The same question asked over both faces: a tool call and its REST twin. Every tool the server
 * lists must have a row here (the twin test checks). `ownAccount`: the answer is the caller's own
 * (its ledger, its webhooks), so both faces ask with the same key, the tool first; these calls are
 * free and write nothing, so REST sees what the tool saw.
 */
const TWINS: { tool: string; args: Record<string, unknown>; path: string; ownAccount?: true }[] = [
  { tool: 'get_scores', args: { ticker: 'AAPL' }, path: '/v1/scores/AAPL' },
  {
    tool: 'get_score_history',
    args: { ticker: 'msft', start: '2019-06-01', end: '2019-06-12', as_known_at: '2019-06-13T00:00:00Z' },
    path: '/v1/scores/msft/history?start=2019-06-01&end=2019-06-12&as_known_at=2019-06-13T00:00:00Z',
  },
  { tool: 'screen_stocks', args: { min_score: 40, limit: 7 }, path: '/v1/screener?min_score=40&limit=7' },
  { tool: 'get_divergences', args: { direction: 'bull', limit: 4 }, path: '/v1/divergence?direction=bull&limit=4' },
  { tool: 'get_upcoming_earnings', args: { days: 30 }, path: '/v1/earnings?days=30' },
  { tool: 'get_divergence_events', args: { since: '2018-01-01' }, path: '/v1/divergence/events?since=2018-01-01' },
  { tool: 'get_track_record', args: {}, path: '/v1/track-record' },
  { tool: 'get_dataset_info', args: {}, path: '/v1/meta' },
  {
    tool: 'get_multi_ticker_history',
    args: { tickers: 'AAPL,msft', start: '2019-05-20', end: '2019-06-12', since: '2019-06-03', as_known_at: '2019-06-13T00:00:00Z' },
    path: '/v1/scores/history?tickers=AAPL,msft&start=2019-05-20&end=2019-06-12&since=2019-06-03&as_known_at=2019-06-13T00:00:00Z',
  },
  { tool: 'get_social_heat', args: { ticker: 'aapl', start: '2019-05-01', end: '2019-06-12' }, path: '/v1/scores/social-heat/aapl?start=2019-05-01&end=2019-06-12' },
  { tool: 'get_signals', args: { limit: 5 }, path: '/v1/signals?limit=5' },
  { tool: 'list_themes', args: {}, path: '/v1/themes' },
  { tool: 'get_theme', args: { slug: 'ai-infrastructure' }, path: '/v1/themes/ai-infrastructure' },
  { tool: 'get_coverage', args: { since: '2019-06-01' }, path: '/v1/coverage?since=2019-06-01' },
  { tool: 'get_open_divergences', args: {}, path: '/v1/divergence/open' },
  { tool: 'get_usage', args: {}, path: '/v1/usage' },
  { tool: 'get_usage_ledger', args: { month: '2019-06', limit: 4 }, path: '/v1/usage/ledger?month=2019-06&limit=4', ownAccount: true },
  { tool: 'get_request_log', args: { operation: 'scores', limit: 3 }, path: '/v1/requests?operation=scores&limit=3', ownAccount: true },
  { tool: 'list_bulk_exports', args: {}, path: '/v1/bulk/exports' },
  { tool: 'list_webhooks', args: {}, path: '/v1/webhooks', ownAccount: true },
];

/** The rate key whose MCP tool a name is. */
const keyOfTool = (name: string) => RATE_KEYS.find((k) => RATE_CARD[k].mcp_tool === name)!;

describe('The hosted MCP server at /mcp/http', function () {
  this.timeout(120_000);
  let server: TestServer;
  const clients: Client[] = [];
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), {
      requestInit: { headers: { 'X-API-Key': key } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }
  async function newKey(tier: Tier) {
    const issued = await createAccountWithKey(server.services, { tier, email: `${tier}-mcp@example.test` });
    await server.services.runner.waitForHead();
    return issued;
  }
  const get = (path: string, key: string) => getJson(`${server.url}${path}`, key);
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const debits = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines).flatMap((e) =>
      e.type === 'CreditsDebited' ? [e.data] : [],
    );
  /** One JSON-RPC request as a raw POST, to see the HTTP response's headers. */
  async function rpc(key: string, method: string, params: Record<string, unknown> = {}) {
    const r = await fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2025-06-18',
        'X-API-Key': key,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await r.json()) as { result?: Record<string, any>; error?: { code: number; message: string } };
    return { status: r.status, credits: r.headers.get('x-credits-remaining'), body };
  }
  const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
  const postRaw = (headers: Record<string, string>) =>
    fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });

  describe('When a client lists the tools', () => {
    it('offers the eight spec tools and a twin of every other read, each read-only, saying what it costs, with every input field described', async () => {
      const client = await connect(demoKey(server.dir, 'builder'));
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).to.deep.equal(TOOL_NAMES);
      for (const tool of tools) {
        expect(tool.annotations?.readOnlyHint, tool.name).to.equal(true);
        expect(tool.title, tool.name).to.be.a('string').and.not.equal('');
        const key = keyOfTool(tool.name);
        const twin = RATE_CARD[key].routes.find((r) => r.method === 'GET')!;
        expect(tool.description, tool.name).to.include(`Costs ${describeCost(key)} (same as its REST twin GET ${twin.path}).`);
        if (RATE_CARD[key].min_tier !== 'free') expect(tool.description, tool.name).to.include(`Needs the ${RATE_CARD[key].min_tier} plan or higher.`);
        for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
          expect((schema as { description?: string }).description, `${tool.name}.${field}`).to.be.a('string').and.not.equal('');
        }
      }
      const described = (name: string) => tools.find((t) => t.name === name)!.description;
      expect(described('get_multi_ticker_history')).to.include('Costs 1 credit per row returned');
      expect(described('get_theme')).to.include('Costs 1 credit per constituent returned');
      expect(described('get_open_divergences')).to.include('Costs 500 credits per call').and.include('Needs the quant plan or higher.');
      expect(described('get_usage')).to.include('Costs free');
      expect(described('list_webhooks')).to.include('(same as its REST twin GET /v1/webhooks)');
      expect(described('get_multi_ticker_history')).to.include('pass max_credits to cap it').and.include('dry_run: true');
      expect(described('get_scores')).to.include('Pass max_credits');
      expect(described('get_usage')).to.not.include('max_credits');
      const screen = tools.find((t) => t.name === 'screen_stocks')!;
      expect(screen.inputSchema.properties).to.have.keys(['min_score', 'limit', 'dry_run', 'max_credits']);
      expect((screen.inputSchema.properties!['limit'] as { type: string }).type).to.equal('integer');
      expect((screen.inputSchema.properties!['min_score'] as { type: string }).type).to.equal('integer');
      const earnings = tools.find((t) => t.name === 'get_upcoming_earnings')!;
      expect((earnings.inputSchema.properties!['days'] as { type: string }).type).to.equal('integer');
      const divergences = tools.find((t) => t.name === 'get_divergences')!;
      expect((divergences.inputSchema.properties!['direction'] as { type: string[] }).type).to.have.members(['string', 'null']);
      expect(divergences.inputSchema.required ?? []).to.deep.equal([]);
      const history = tools.find((t) => t.name === 'get_score_history')!;
      expect(history.inputSchema.required).to.deep.equal(['ticker']);
      expect(history.inputSchema.properties).to.have.keys(['ticker', 'start', 'end', 'as_known_at', 'dry_run', 'max_credits']);
      const multi = tools.find((t) => t.name === 'get_multi_ticker_history')!;
      expect(multi.inputSchema.properties).to.have.keys(['tickers', 'start', 'end', 'since', 'as_known_at', 'dry_run', 'max_credits']);
      expect(multi.inputSchema.required ?? []).to.deep.equal([]);
      expect(tools.find((t) => t.name === 'get_theme')!.inputSchema.required).to.deep.equal(['slug']);
      expect(tools.find((t) => t.name === 'get_usage_ledger')!.inputSchema.properties).to.have.keys(['month', 'limit', 'cursor', 'dry_run', 'max_credits']);
    });
  });

  describe('When the same question is asked over REST and over MCP', () => {
    it('returns the same body for every tool it lists and draws the same credits, recorded with channel mcp', async () => {
      const viaRest = await newKey('quant');
      const viaMcp = await newKey('quant');
      const s = server.services;
      await registerWebhook(
        { events: s.events, clock: s.clock, ids: s.ids, personal: s.personal, allowSubnets: s.config.webhookAllowSubnets },
        { accountId: viaMcp.account_id, eventType: 'score_move', url: 'https://hooks.example.com/scores' },
      );
      await s.runner.waitForHead();
      const client = await connect(viaMcp.key);
      // A tool without a row in TWINS fails here: each tool is checked against its REST twin.
      expect(TWINS.map((t) => t.tool).sort()).to.deep.equal((await client.listTools()).tools.map((t) => t.name).sort());
      for (const twin of TWINS) {
        const restKey = twin.ownAccount ? viaMcp : viaRest;
        const restCharged = (await debits(restKey.account_id)).length;
        const mcpCharged = (await debits(viaMcp.account_id)).length;
        const rest = twin.ownAccount ? null : await get(twin.path, restKey.key);
        const result = await call(client, twin.tool, twin.args);
        const mcpDebits = (await debits(viaMcp.account_id)).slice(mcpCharged);
        const twinRest = rest ?? (await get(twin.path, restKey.key));
        const restDebits = (await debits(restKey.account_id)).slice(twin.ownAccount ? mcpCharged + mcpDebits.length : restCharged);
        expect(twinRest.status, twin.path).to.equal(200);
        expect(result.isError, twin.tool).to.not.equal(true);
        expect(result.structuredContent, twin.tool).to.deep.equal(twinRest.body);
        const text = result.content[0];
        expect(text?.type).to.equal('text');
        // The text block is the body's JSON, but the track record's: a summary (it has more than 20 trades here).
        const asText = twin.tool === 'get_track_record' ? JSON.parse(trackRecordText(twinRest.body, JSON.stringify(twinRest.body))) : twinRest.body;
        expect(JSON.parse(text?.type === 'text' ? text.text : 'null'), twin.tool).to.deep.equal(asText);
        // One charge each, of the same rate key and cost (a free call records none), by channel.
        expect(mcpDebits.map((d) => [d.endpoint, d.cost]), twin.tool).to.deep.equal(restDebits.map((d) => [d.endpoint, d.cost]));
        expect(mcpDebits.map((d) => d.endpoint), twin.tool).to.deep.equal(RATE_CARD[keyOfTool(twin.tool)].credits === 0 ? [] : [keyOfTool(twin.tool)]);
        expect(mcpDebits.every((d) => d.channel === 'mcp') && restDebits.every((d) => d.channel === 'rest'), twin.tool).to.equal(true);
        // The balance after the call, as a number: what the next REST response of the key says.
        const balance = result._meta?.['credits_remaining'];
        expect(balance, twin.tool).to.be.a('number');
        const next = twin.ownAccount ? twinRest : await get('/v1/coverage', viaMcp.key);
        expect(balance, twin.tool).to.equal(Number(next.headers.get('x-credits-remaining')));
        if (!twin.ownAccount) expect(balance, twin.tool).to.equal(Number(twinRest.headers.get('x-credits-remaining')));
      }
      const restDebits = await debits(viaRest.account_id);
      const mcpDebits = await debits(viaMcp.account_id);
      // Non-trivial answers: rows were returned and billed per row.
      const costOf = (endpoint: string) => mcpDebits.find((d) => d.endpoint === endpoint)?.cost;
      expect(costOf('screener')).to.equal(14);
      expect(costOf('history')).to.be.greaterThan(0);
      expect(costOf('multi_history')).to.be.greaterThan(10);
      expect(costOf('social_heat')).to.be.greaterThan(10);
      expect(costOf('theme_detail')).to.be.greaterThan(0);
      expect(costOf('divergence_open')).to.equal(500);
      expect(restDebits.map((d) => [d.endpoint, d.cost])).to.deep.equal(mcpDebits.map((d) => [d.endpoint, d.cost]));
      expect((await get('/v1/usage', viaMcp.key)).body.used_this_month).to.equal((await get('/v1/usage', viaRest.key)).body.used_this_month);
    });

    it('pages through the caller\'s own ledger with next_cursor as REST does, and lists its own webhooks', async () => {
      const k = await newKey('quant');
      const client = await connect(k.key);
      for (const ticker of ['AAPL', 'MSFT', 'KO', 'COST', 'NVDA']) expect((await call(client, 'get_scores', { ticker })).isError, ticker).to.not.equal(true);
      type Page = { entries: { seq: number; endpoint: string | null; channel: string | null }[]; next_cursor: string | null };
      const whole = (await get('/v1/usage/ledger?limit=1000', k.key)).body as Page;
      expect(whole.entries.filter((e) => e.endpoint === 'scores' && e.channel === 'mcp')).to.have.length(5);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const args: Record<string, unknown> = { limit: 2, ...(cursor ? { cursor } : {}) };
        const viaMcp = (await call(client, 'get_usage_ledger', args)).structuredContent as Page;
        const viaRest = await get(`/v1/usage/ledger?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, k.key);
        expect(viaMcp, cursor ?? 'first page').to.deep.equal(viaRest.body);
        seen.push(...viaMcp.entries.map((e) => e.seq));
        cursor = viaMcp.next_cursor;
      } while (cursor !== null && seen.length <= whole.entries.length);
      expect(seen).to.deep.equal(whole.entries.map((e) => e.seq));

      const s = server.services;
      await registerWebhook(
        { events: s.events, clock: s.clock, ids: s.ids, personal: s.personal, allowSubnets: s.config.webhookAllowSubnets },
        { accountId: k.account_id, eventType: 'divergence_event', url: 'https://hooks.example.com/div' },
      );
      await s.runner.waitForHead();
      const hooks = (await call(client, 'list_webhooks')).structuredContent as { webhooks: { url: string; event_type: string }[] };
      expect(hooks.webhooks.map((w) => [w.event_type, w.url])).to.deep.equal([['divergence_event', 'https://hooks.example.com/div']]);
      expect(hooks).to.deep.equal((await get('/v1/webhooks', k.key)).body);
    });
  });

  describe('When get_divergences is asked for a direction', () => {
    it('takes direction null as both directions (the spec: absent or null means all), as REST does', async () => {
      const client = await connect(demoKey(server.dir, 'builder'));
      const both = await get('/v1/divergence?limit=6', demoKey(server.dir, 'builder'));
      expect(both.status).to.equal(200);
      const result = await call(client, 'get_divergences', { direction: null, limit: 6 });
      expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
      expect(result.structuredContent).to.deep.equal(both.body);
      expect((result.structuredContent as { rows: { gap: number }[] }).rows.map((r) => Math.sign(r.gap))).to.include.members([1, -1]);
      expect(await call(client, 'get_divergences', { limit: 6 })).to.have.deep.property('structuredContent', both.body);
    });

    it('still reads bull and bear in any case', async () => {
      const client = await connect(demoKey(server.dir, 'builder'));
      const bear = await get('/v1/divergence?direction=bear&limit=4', demoKey(server.dir, 'builder'));
      expect(bear.body.rows).to.have.length.greaterThan(0);
      expect((await call(client, 'get_divergences', { direction: 'BeAr', limit: 4 })).structuredContent).to.deep.equal(bear.body);
    });
  });

  describe('When a response goes back to an authenticated key', () => {
    it('carries X-Credits-Remaining on initialize, tools/list, a charged call (its balance after the charge) and a refusal', async () => {
      const k = await newKey('quant');
      const start = (await get('/v1/usage', k.key)).headers.get('x-credits-remaining');
      expect(start).to.match(/^\d+$/);
      const init = await rpc(k.key, 'initialize', INITIALIZE);
      expect(init.status).to.equal(200);
      expect(init.body.result?.['serverInfo']?.name).to.equal('scores-service');
      expect(init.credits).to.equal(start);
      const list = await rpc(k.key, 'tools/list');
      expect(list.body.result?.['tools']).to.have.length(TOOL_NAMES.length);
      expect(list.credits).to.equal(start);

      const paid = await rpc(k.key, 'tools/call', { name: 'screen_stocks', arguments: { limit: 3 } });
      expect(paid.body.result?.['isError']).to.not.equal(true);
      expect(paid.credits).to.equal(String(Number(start) - 6));
      expect(paid.body.result?.['_meta']?.credits_remaining).to.equal(Number(start) - 6);

      const refused = await rpc(k.key, 'tools/call', { name: 'screen_stocks', arguments: { limit: 651 } });
      expect(refused.body.result?.['structuredContent']?.code).to.equal('limit_exceeded');
      expect(refused.credits).to.equal(paid.credits);
      expect(refused.body.result?.['_meta']?.credits_remaining).to.equal(Number(start) - 6);
      expect((await get('/v1/usage', k.key)).headers.get('x-credits-remaining')).to.equal(paid.credits);
    });

    it('carries the same value as REST on a tier refusal, an exhausted account and an enterprise key (_meta: null when unmetered)', async () => {
      const tier = await rpc(demoKey(server.dir, 'hobbyist'), 'tools/call', { name: 'get_upcoming_earnings', arguments: {} });
      const restTier = await get('/v1/earnings', demoKey(server.dir, 'hobbyist'));
      expect(tier.body.result?.['structuredContent']?.code).to.equal('tier');
      expect(tier.credits).to.be.a('string').and.equal(restTier.headers.get('x-credits-remaining'));
      expect(tier.body.result?.['_meta']?.credits_remaining).to.be.a('number').and.equal(Number(tier.credits));

      const broke = await newKey('free');
      await server.services.ledger.debit(broke.account_id, { request_id: 'setup', endpoint: 'history', channel: 'rest', cost: 999 });
      const exhausted = await rpc(broke.key, 'tools/call', { name: 'get_scores', arguments: { ticker: 'AAPL' } });
      expect(exhausted.body.result?.['structuredContent']?.code).to.equal('credits_exhausted');
      expect(exhausted.credits).to.equal('1');
      expect(exhausted.body.result?.['_meta']?.credits_remaining).to.equal(1);

      const big = await newKey('enterprise');
      const restBig = (await get('/v1/scores/AAPL', big.key)).headers.get('x-credits-remaining');
      expect(restBig).to.equal('unlimited');
      expect((await rpc(big.key, 'initialize', INITIALIZE)).credits).to.equal(restBig);
      const bigCall = await rpc(big.key, 'tools/call', { name: 'get_scores', arguments: { ticker: 'AAPL' } });
      expect(bigCall.body.result?.['isError']).to.not.equal(true);
      expect(bigCall.credits).to.equal(restBig);
      // The header's `unlimited` is null in JSON, as /v1/usage shows credits_remaining null when unmetered.
      expect(bigCall.body.result?.['_meta']).to.deep.equal({ credits_remaining: null });
      const usage = (await rpc(big.key, 'tools/call', { name: 'get_usage', arguments: {} })).body.result?.['structuredContent'];
      expect(usage).to.include({ tier: 'enterprise', credits_remaining: null, monthly_allowance: null });
    });
  });

  describe('When the key is missing, unknown or revoked', () => {
    it('refuses at the HTTP level with a 401 or 403 problem before any MCP message is handled', async () => {
      for (const headers of [{}, { 'X-API-Key': 'sk_live_nope' }] as Record<string, string>[]) {
        const r = await postRaw(headers);
        expect(r.status).to.equal(401);
        expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(((await r.json()) as { code: string }).code).to.equal('unauthorized');
      }
      const k = await newKey('hobbyist');
      expect((await postRaw({ 'X-API-Key': k.key })).status).to.equal(200);
      await revokeKey(server.services, k.key_id);
      await server.services.runner.waitForHead();
      const revoked = await postRaw({ 'X-API-Key': k.key });
      expect(revoked.status).to.equal(403);
      expect(((await revoked.json()) as { code: string }).code).to.equal('key_forbidden');
    });

    it('answers GET and DELETE with 405: the server is stateless', async () => {
      for (const method of ['GET', 'DELETE']) {
        const r = await fetch(`${server.url}/mcp/http`, { method, headers: { 'X-API-Key': demoKey(server.dir, 'builder') } });
        expect(r.status, method).to.equal(405);
        expect(r.headers.get('allow')).to.equal('POST');
        expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(await r.json()).to.include({ status: 405, code: 'method_not_allowed', title: 'Method not allowed' });
      }
    });

    it('answers a body over 64 KiB with 413 payload_too_large', async () => {
      const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(70 * 1024) } });
      const r = await fetch(`${server.url}/mcp/http`, {
        method: 'POST',
        headers: { 'X-API-Key': demoKey(server.dir, 'builder'), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: big,
      });
      expect(r.status).to.equal(413);
      expect(await r.json()).to.include({ status: 413, code: 'payload_too_large', title: 'Request body too large' });
    });
  });

  describe('When a call is refused', () => {
    async function expectSameRefusal(key: string, tool: string, args: Record<string, unknown>, path: string, code: string) {
      const client = await connect(key);
      const result = await call(client, tool, args);
      const rest = await get(path, key);
      expect(result.isError).to.equal(true);
      expect(result.structuredContent).to.include({ code, status: rest.status });
      expect(result.structuredContent).to.deep.equal(rest.body);
      return result;
    }

    it('gives a plan below the minimum tier the same tier problem as REST', async () => {
      await expectSameRefusal(demoKey(server.dir, 'hobbyist'), 'get_upcoming_earnings', {}, '/v1/earnings', 'tier');
    });

    it('gives a free key asking for a ticker outside top100 the same coverage problem, and charges nothing', async () => {
      const wide = (await get('/v1/coverage', demoKey(server.dir, 'builder'))).body.tickers as string[];
      const top = new Set((await get('/v1/coverage', demoKey(server.dir, 'free'))).body.tickers as string[]);
      const outside = wide.find((t) => !top.has(t))!;
      const k = await newKey('free');
      await expectSameRefusal(k.key, 'get_scores', { ticker: outside }, `/v1/scores/${outside}`, 'coverage');
      expect(await debits(k.account_id)).to.deep.equal([]);
    });

    it('gives a limit above the maximum the same limit_exceeded problem', async () => {
      await expectSameRefusal(demoKey(server.dir, 'builder'), 'screen_stocks', { limit: 651 }, '/v1/screener?limit=651', 'limit_exceeded');
    });

    it('gives a direction other than bull or bear the same bad_request problem', async () => {
      await expectSameRefusal(demoKey(server.dir, 'builder'), 'get_divergences', { direction: 'sideways' }, '/v1/divergence?direction=sideways', 'bad_request');
    });

    it('gives an argument of the wrong JSON type the same problem as the equivalent query, with the credits left', async () => {
      const k = await newKey('quant');
      const cases: [string, Record<string, unknown>, string, string][] = [
        ['screen_stocks', { limit: 'abc' }, '/v1/screener?limit=abc', 'bad_request'],
        ['screen_stocks', { limit: 1.5 }, '/v1/screener?limit=1.5', 'bad_request'],
        ['screen_stocks', { min_score: 'x' }, '/v1/screener?min_score=x', 'bad_request'],
        ['screen_stocks', { limit: true }, '/v1/screener?limit=true', 'bad_request'],
        ['screen_stocks', { limit: null }, '/v1/screener?limit=null', 'bad_request'],
        ['get_upcoming_earnings', { days: 'x' }, '/v1/earnings?days=x', 'bad_request'],
        ['get_divergences', { limit: [5] }, '/v1/divergence?limit=%5B5%5D', 'bad_request'],
        ['get_divergences', { direction: 7 }, '/v1/divergence?direction=7', 'bad_request'],
        ['get_score_history', { ticker: 'AAPL', start: 20190601 }, '/v1/scores/AAPL/history?start=20190601', 'bad_request'],
        ['get_divergence_events', { since: false }, '/v1/divergence/events?since=false', 'bad_request'],
        ['get_scores', { ticker: 42 }, '/v1/scores/42', 'not_found'],
      ];
      for (const [tool, args, path, code] of cases) {
        const result = await expectSameRefusal(k.key, tool, args, path, code);
        expect(result._meta?.['credits_remaining'], `${tool} ${JSON.stringify(args)}`).to.equal(2_500_000);
      }
      expect((await get('/v1/screener?limit=abc', k.key)).body.detail).to.equal('limit must be an integer (got "abc")');
      const raw = await rpc(k.key, 'tools/call', { name: 'screen_stocks', arguments: { limit: 'abc' } });
      expect(raw.body.error).to.equal(undefined);
      expect(raw.body.result?.['structuredContent']?.detail).to.equal('limit must be an integer (got "abc")');
      expect(raw.credits).to.equal('2500000');
      expect(raw.body.result?.['_meta']?.credits_remaining).to.equal(2_500_000);
      expect(await debits(k.account_id)).to.deep.equal([]);
    });

    it('reads an integer sent as a numeric string as REST reads the query', async () => {
      const client = await connect(demoKey(server.dir, 'builder'));
      const rest = await get('/v1/screener?limit=3', demoKey(server.dir, 'builder'));
      expect((await call(client, 'screen_stocks', { limit: '3' })).structuredContent).to.deep.equal(rest.body);
    });

    it('refuses a missing required argument with a bad_request problem, as it refuses any other bad argument', async () => {
      const client = await connect(demoKey(server.dir, 'builder'));
      const result = await call(client, 'get_scores', {});
      expect(result.isError).to.equal(true);
      expect(result.structuredContent).to.include({ code: 'bad_request', status: 400, detail: 'ticker is required' });
      const text = result.content[0];
      expect(JSON.parse(text?.type === 'text' ? text.text : 'null')).to.deep.equal(result.structuredContent);
    });

    it('gives an exhausted account the same credits_exhausted problem and debits nothing more', async () => {
      const k = await newKey('free');
      await server.services.ledger.debit(k.account_id, { request_id: 'setup', endpoint: 'history', channel: 'rest', cost: 999 });
      const result = await expectSameRefusal(k.key, 'get_scores', { ticker: 'AAPL' }, '/v1/scores/AAPL', 'credits_exhausted');
      expect(result._meta?.['credits_remaining']).to.equal(1);
      expect((await debits(k.account_id)).map((d) => d.cost)).to.deep.equal([999]);
    });
  });
});
