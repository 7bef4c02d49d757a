import { expect } from 'chai';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { RATE_CARD, RATE_KEYS } from '../../src/domain/rate-card.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

// ajv-formats is CommonJS: under ESM its default export is the module object on some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv | Ajv2020) => void;

type Json = Record<string, any>;

/**
 * Issue 28 item 4, tool by tool, through the official MCP client: each tool's input schema is its
 * REST twin's parameters (the served OpenAPI document's, with their enums, bounds, formats and
 * defaults), an unknown argument is a free `bad_request` tool error, and a real call's
 * structuredContent validates against the tool's outputSchema (ajv, draft-07 and 2020-12).
 */
const CALLS: Record<string, Json> = {
  get_scores: { ticker: 'AAPL' },
  get_score_history: { ticker: 'MSFT', start: '2019-06-01', end: '2019-06-12', as_known_at: '2019-06-13T00:00:00Z' },
  screen_stocks: { min_score: 40, limit: 7 },
  get_divergences: { direction: 'bear', limit: 4 },
  get_upcoming_earnings: { days: 30 },
  get_divergence_events: { since: '2018-01-01' },
  get_track_record: {},
  get_dataset_info: {},
  get_multi_ticker_history: { tickers: ['AAPL', 'MSFT'], start: '2019-05-20', end: '2019-06-12' },
  get_social_heat: { ticker: 'AAPL', start: '2019-05-01', end: '2019-06-12' },
  get_signals: { limit: 5 },
  list_themes: {},
  get_theme: { slug: 'ai-infrastructure' },
  get_coverage: { since: '2019-06-01' },
  get_open_divergences: {},
  get_usage: {},
  get_usage_ledger: { month: '2019-06', limit: 4 },
  get_request_log: { status: '2xx', limit: 4 },
  list_bulk_exports: {},
  list_webhooks: {},
};

/** The parameter keywords a tool's argument must carry as its twin declares them. */
const CARRIED = ['type', 'enum', 'minimum', 'maximum', 'default', 'format', 'pattern', 'items', 'minItems', 'maxItems'];

describe('Every MCP tool is as strict as its REST twin, from the one OpenAPI document', function () {
  this.timeout(180_000);
  let server: TestServer;
  let client: Client;
  let key = '';
  let accountId = '';
  let tools: Tool[] = [];
  let doc: Json = {};
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email: 'mcp-contract@example.test' });
    await server.services.runner.waitForHead();
    [key, accountId] = [issued.key, issued.account_id];
    client = new Client({ name: 'mcp-contract', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
    tools = (await client.listTools()).tools;
    doc = (await getJson(`${server.url}/openapi.json`)).body;
  });
  after(async () => {
    await client?.close();
    await server?.stop();
  });

  const twinOf = (tool: string) => {
    const rateKey = RATE_KEYS.find((k) => RATE_CARD[k].mcp_tool === tool)!;
    const path = RATE_CARD[rateKey].routes.find((r) => r.method === 'GET')!.path;
    return { path, op: doc['paths'][path]['get'] as Json };
  };
  const debits = async () =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited');
  const used = async () => (await getJson(`${server.url}/v1/usage`, key)).body['used_this_month'] as number;
  const call = async (name: string, args: Json) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const validators = () => {
    const draft7 = new Ajv({ strict: true, strictTypes: false, allErrors: true });
    const draft2020 = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
    addFormats(draft7);
    addFormats(draft2020);
    return [draft7, draft2020];
  };

  it('has a row for every tool it lists', () => {
    expect(Object.keys(CALLS).sort()).to.deep.equal(tools.map((t) => t.name).sort());
  });

  it('declares no listChanged: the tools of a stateless server never change', () => {
    expect(client.getServerCapabilities()?.tools).to.deep.equal({});
  });

  for (const name of Object.keys(CALLS)) {
    describe(name, () => {
      const tool = () => tools.find((t) => t.name === name)!;

      it("lists its REST twin's parameters as its input schema: the same names, required ones, types, enums, bounds, formats and defaults, and no others but the budget's", () => {
        const { op } = twinOf(name);
        const params = ((op['parameters'] ?? []) as Json[]).filter((p) => p['in'] === 'path' || p['in'] === 'query');
        const input = tool().inputSchema as Json;
        expect(input['additionalProperties']).to.equal(false);
        // REST's X-Dry-Run and X-Max-Credits headers, as arguments (src/web/call-budget.ts).
        expect(Object.keys(input['properties'] ?? {}).sort()).to.deep.equal([...params.map((p) => String(p['name'])), 'dry_run', 'max_credits'].sort());
        expect(input['properties']['max_credits']).to.include({ minimum: 0 });
        expect((input['required'] ?? []).sort()).to.deep.equal(params.filter((p) => p['required']).map((p) => String(p['name'])).sort());
        for (const p of params) {
          const arg = input['properties'][p['name']] as Json;
          expect(arg['description'], p['name']).to.be.a('string').and.not.equal('');
          for (const k of CARRIED) {
            if (p['schema'][k] === undefined) continue;
            // `direction` also takes null (absent), as the spec says: its type and enum gain it.
            const nullable = Array.isArray(arg['type']) && arg['type'].includes('null');
            const expected = nullable && (k === 'type' || k === 'enum') ? [p['schema'][k], null].flat() : p['schema'][k];
            expect(arg[k], `${name}.${p['name']}.${k}`).to.deep.equal(k === 'type' && nullable ? [p['schema'][k], 'null'] : expected);
          }
        }
      });

      it('refuses an unknown argument with a bad_request tool error and charges nothing', async () => {
        const [before, usedBefore] = [(await debits()).length, await used()];
        const result = await call(name, { ...CALLS[name], no_such_argument: 1 });
        expect(result.isError).to.equal(true);
        expect(result.structuredContent).to.include({ code: 'bad_request', status: 400 });
        expect(result.structuredContent!['detail']).to.include('"no_such_argument"');
        const text = result.content[0];
        expect(JSON.parse(text?.type === 'text' ? text.text : 'null')).to.deep.equal(result.structuredContent);
        expect((await debits()).length).to.equal(before);
        expect(await used()).to.equal(usedBefore);
      });

      it("answers a real call with structuredContent its outputSchema validates (and its refusals' problem details too)", async () => {
        const result = await call(name, CALLS[name]!);
        expect(result.isError, JSON.stringify(result.content)).to.not.equal(true);
        const { path, op } = twinOf(name);
        expect(op['responses']['200'], path).to.not.equal(undefined);
        const refusal = await call(name, { bogus: true });
        for (const ajv of validators()) {
          const validate = ajv.compile(tool().outputSchema!);
          expect(validate(result.structuredContent), `${name}: ${ajv.errorsText(validate.errors)}`).to.equal(true);
          expect(validate(refusal.structuredContent), `${name} refusal: ${ajv.errorsText(validate.errors)}`).to.equal(true);
          // Not everything passes: the schema says what the body is.
          expect(validate({ no: 'such body' }), name).to.equal(false);
        }
      });
    });
  }

  describe('The cases of the issue', () => {
    it('refuses get_multi_ticker_history with a misspelt ticker, and screen_stocks with limt, free of charge, as REST refuses them', async () => {
      const before = (await debits()).length;
      for (const [tool, args, path] of [
        ['get_multi_ticker_history', { ticker: 'AAPL', start: '2019-06-10' }, '/v1/scores/history?ticker=AAPL&start=2019-06-10'],
        ['screen_stocks', { limt: 1 }, '/v1/screener?limt=1'],
      ] as const) {
        const result = await call(tool, args);
        expect(result.isError, tool).to.equal(true);
        expect(result.structuredContent, tool).to.include({ code: 'bad_request', status: 400 });
        expect((await getJson(`${server.url}${path}`, key)).body, path).to.include({ code: 'bad_request', status: 400 });
      }
      expect((await debits()).length).to.equal(before);
    });

    it('refuses a missing required argument with the same problem shape, free', async () => {
      const before = (await debits()).length;
      const result = await call('get_theme', {});
      expect(result.structuredContent).to.include({ code: 'bad_request', status: 400, detail: 'slug is required' });
      expect((await debits()).length).to.equal(before);
    });

    it('takes tickers as an array, as the REST query takes the comma-separated list', async () => {
      const result = await call('get_multi_ticker_history', { tickers: ['AAPL', 'msft'], start: '2019-06-01', end: '2019-06-12' });
      const rest = await getJson(`${server.url}/v1/scores/history?tickers=AAPL,msft&start=2019-06-01&end=2019-06-12`, key);
      expect(result.structuredContent).to.deep.equal(rest.body);
    });

    it('answers a tools/call without a tool name with a JSON-RPC invalid params error that carries no validator internals', async () => {
      for (const params of [{}, { name: 7 }, { arguments: { ticker: 'AAPL' } }]) {
        const r = await fetch(`${server.url}/mcp/http`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18', 'X-API-Key': key },
          body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params }),
        });
        const body = (await r.json()) as Json;
        expect(body['id']).to.equal(5);
        expect(body['error']['code'], JSON.stringify(params)).to.equal(-32602);
        expect(body['error']['message']).to.match(/^Invalid params: tools\/call takes params.name/);
        expect(body['error']['message']).to.not.match(/invalid_type|expected|\[|\{|zod/i);
      }
    });
  });
});
