import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import type { fixedClock } from '../../src/core/clock.js';
import { API_KEY_CHALLENGE, TRANSPORT_HEADERS } from '../../src/web/response-headers.js';
import { PLANS, TIERS, type Tier } from '../../src/domain/plans.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { FormBrowser, linksTo } from '../support/form-browser.js';
import { ContractChecker, operationsOf, type OpenApiDocument } from '../support/openapi-contract.js';
import { startTestServer, type TestServer } from '../support/server.js';

type Json = Record<string, any>;

// ajv-formats is CommonJS: under ESM its default export is the module object on some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

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
  const newKey = async (tier: Tier) => {
    const { key } = await createAccountWithKey(server.services, { tier });
    await server.services.runner.waitForHead();
    return key;
  };
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

  describe('as_known_at: declared as the parser reads it', () => {
    // Accepted by the service (a date, RFC 3339 date-times in their variants, a restated_at value)
    // and refused (no zone, no date, not a calendar day, a time past 23:59).
    const ACCEPTED = [
      '2019-03-25',
      '2019-03-25T22:00:00Z',
      '2019-03-25t22:00:00z',
      '2019-03-25 22:00:00Z',
      '2019-03-26T00:00:00+02:00',
      '2019-03-26T00:00:00+0200',
      '2019-03-26T00:00:00+02',
      '2019-03-25T22:00:00.123456789012Z',
      '2016-12-31T23:59:60Z',
      '2019-03-25 22:00:00',
    ];
    const REFUSED = ['yesterday', '2019-03-25T22:00:00', '2019-02-30', '2019-03-25T24:00:00Z', '20190325', '2019-03-25T22:00Z+01:00'];
    const OPERATIONS = [
      ['/v1/scores/{ticker}/history', (v: string) => `/v1/scores/MSFT/history?start=2019-03-18&as_known_at=${encodeURIComponent(v)}`],
      ['/v1/scores/history', (v: string) => `/v1/scores/history?tickers=MSFT&start=2019-03-18&as_known_at=${encodeURIComponent(v)}`],
    ] as const;

    it('declares a date or a date-time (or a restated_at value) on both history operations, and serves exactly what it declares', async () => {
      const key = await newKey('quant');
      const ajv = new Ajv({ strict: false });
      addFormats(ajv);
      for (const [path, url] of OPERATIONS) {
        const parameter = (doc['paths'][path]['get'].parameters as Json[]).find((p) => p['name'] === 'as_known_at')!;
        const valid = ajv.compile(parameter['schema'] as Json);
        for (const value of ACCEPTED) {
          expect(valid(value), `${path}: the document refuses ${value}`).to.equal(true);
          const r = await call('GET', url(value), key);
          expect(r.status, `${path} as_known_at=${value}: ${r.text.slice(0, 200)}`).to.equal(200);
        }
        for (const value of REFUSED) {
          expect(valid(value), `${path}: the document allows ${value}`).to.equal(false);
          const r = await call('GET', url(value), key);
          expect(r.status, `${path} as_known_at=${value}`).to.equal(400);
          expect(r.body['errors'], value).to.deep.equal([{ parameter: 'as_known_at', message: r.body['errors'][0].message }]);
        }
      }
    });

    it('reads a bare date as 00:00 UTC that day, and echoes the instant used', async () => {
      const key = await newKey('quant');
      const byDate = await call('GET', '/v1/scores/MSFT/history?start=2019-03-18&as_known_at=2019-03-25', key);
      const byInstant = await call('GET', '/v1/scores/MSFT/history?start=2019-03-18&as_known_at=2019-03-25T00:00:00Z', key);
      expect(byDate.status, byDate.text).to.equal(200);
      expect(byDate.body['as_known_at']).to.equal('2019-03-25T00:00:00.000Z');
      expect(byDate.body['rows']).to.deep.equal(byInstant.body['rows']);
    });
  });

  describe('operation ids', () => {
    it('names every operation with a unique verb-and-object id a generated SDK can use as its function name', () => {
      const ids: Record<string, string> = {};
      for (const [path, item] of Object.entries<Json>(doc['paths'])) for (const [method, op] of Object.entries<Json>(item)) ids[`${method.toUpperCase()} ${path}`] = op['operationId'];
      expect(ids).to.deep.equal({
        'GET /v1/scores/{ticker}': 'getScore',
        'GET /v1/scores/{ticker}/history': 'getScoreHistory',
        'GET /v1/scores/history': 'getMultiTickerHistory',
        'GET /v1/scores/social-heat/{ticker}': 'getSocialHeat',
        'GET /v1/screener': 'screenStocks',
        'GET /v1/divergence': 'getDivergences',
        'GET /v1/divergence/events': 'getDivergenceEvents',
        'GET /v1/divergence/open': 'getOpenDivergences',
        'GET /v1/signals': 'getSignals',
        'GET /v1/themes': 'listThemes',
        'GET /v1/themes/{slug}': 'getTheme',
        'GET /v1/earnings': 'getUpcomingEarnings',
        'GET /v1/coverage': 'getCoverage',
        'GET /v1/track-record': 'getTrackRecord',
        'GET /v1/keys': 'listKeys',
        'PATCH /v1/keys/{key_id}': 'setKeyLimits',
        'GET /v1/meta': 'getMeta',
        'GET /v1/usage': 'getUsage',
        'GET /v1/usage/ledger': 'getUsageLedger',
        'GET /v1/requests': 'getRequestLog',
        'GET /v1/bulk/exports': 'listBulkExports',
        'GET /v1/bulk/exports/{bundle_id}/{name}': 'downloadBulkExportFile',
        'GET /v1/webhooks': 'listWebhooks',
        'POST /v1/webhooks': 'createWebhook',
        'DELETE /v1/webhooks/{webhook_id}': 'deleteWebhook',
        'POST /v1/webhooks/{webhook_id}/test': 'testWebhook',
        'POST /v1/webhooks/{webhook_id}/enable': 'enableWebhook',
        'POST /v1/webhooks/{webhook_id}/rotate-secret': 'rotateWebhookSecret',
        'GET /v1/webhooks/{webhook_id}/deliveries': 'listWebhookDeliveries',
        'POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend': 'resendDelivery',
        'POST /v1/webhooks/{webhook_id}/resend-failed': 'resendFailedDeliveries',
      });
      // camelCase, a verb and at least one word naming what it acts on; none twice.
      for (const id of Object.values(ids)) expect(id).to.match(/^[a-z]+(?:[A-Z][a-z]+)+$/);
      expect(new Set(Object.values(ids)).size).to.equal(Object.keys(ids).length);
    });
  });

  describe('500', () => {
    /** A request for the operation: its path with parameter values, and an empty JSON body for a POST. */
    const concrete = (path: string) => path.replace('{ticker}', 'AAPL').replace('{slug}', 'ai-infrastructure').replace('{webhook_id}', '1').replace('{delivery_id}', 'msg_x').replace('{bundle_id}', 'b').replace('{name}', 'n.csv.gz');

    it('declares a 500 problem on every operation, and a failing service answers each with one that matches it', async () => {
      const key = await newKey('enterprise');
      const checker = new ContractChecker(doc as OpenApiDocument, TRANSPORT_HEADERS);
      const operations = operationsOf(doc as OpenApiDocument);
      expect(operations.length).to.be.greaterThan(20);
      for (const op of operations) {
        const examples = doc['paths'][op.path][op.method.toLowerCase()].responses['500']?.content?.['application/problem+json']?.examples;
        expect(Object.keys(examples ?? {}), `${op.id} declares no 500`).to.deep.equal(['internal']);
      }
      // A fault where every operation passes (the key check): what the caller gets is the document's 500.
      const meter = server.services.meter;
      const authenticate = meter.authenticate.bind(meter);
      meter.authenticate = () => Promise.reject(new Error('injected: the key store is unreachable'));
      try {
        for (const op of operations) {
          const res = await fetch(`${server.url}${concrete(op.path)}`, {
            method: op.method,
            headers: { 'X-API-Key': key, ...(op.method === 'POST' ? { 'Content-Type': 'application/json' } : {}) },
            body: op.method === 'POST' ? '{}' : undefined,
          });
          const body = Buffer.from(await res.arrayBuffer());
          expect(res.status, op.id).to.equal(500);
          const headers = Object.fromEntries([...res.headers]);
          expect(checker.check(op, { status: res.status, headers, body }), op.id).to.deep.equal([]);
          expect(JSON.parse(body.toString())).to.include({ code: 'internal', status: 500 });
        }
      } finally {
        meter.authenticate = authenticate;
      }
    });
  });

  describe('401 names its challenge', () => {
    it('declares WWW-Authenticate on every 401, naming the document’s own API key header', () => {
      const scheme = doc['components']['securitySchemes']['api_key'];
      expect(scheme).to.include({ type: 'apiKey', in: 'header' });
      expect(API_KEY_CHALLENGE).to.equal(`ApiKey realm="scores", header="${scheme['name']}"`);
      for (const op of operationsOf(doc as OpenApiDocument)) {
        const ref = doc['paths'][op.path][op.method.toLowerCase()].responses['401'].headers['WWW-Authenticate']?.['$ref'] as string | undefined;
        expect(ref, op.id).to.equal('#/components/headers/WwwAuthenticate');
      }
      expect(doc['components']['headers']['WwwAuthenticate']).to.deep.include({ required: true, schema: { type: 'string', enum: [API_KEY_CHALLENGE] } });
    });

    it('sends it with every 401 of REST and of MCP, for a missing and an unknown key', async () => {
      const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
      const mcpHeaders = { Accept: 'application/json, text/event-stream' };
      for (const key of [null, 'sk_live_not-a-key']) {
        // Eight requests without a valid key in all: within the per-address burst.
        const answers = [
          ['GET /v1/usage', await call('GET', '/v1/usage', key)],
          ['GET /v1/scores/AAPL', await call('GET', '/v1/scores/AAPL', key)],
          ['POST /v1/webhooks', await call('POST', '/v1/webhooks', key, { json: { event_type: 'score_move', url: 'https://hooks.example.com/x' } })],
          ['POST /mcp/http', await call('POST', '/mcp/http', key, { json: rpc, headers: mcpHeaders })],
        ] as const;
        for (const [what, r] of answers) {
          expect(r.status, `${what} ${key}`).to.equal(401);
          expect(r.body, what).to.include({ code: 'unauthorized' });
          expect(r.headers.get('www-authenticate'), `${what} ${key}`).to.equal(API_KEY_CHALLENGE);
        }
      }
      // Only a 401 carries it.
      const k = await newKey('free');
      expect((await call('GET', '/v1/usage', k)).headers.get('www-authenticate')).to.equal(null);
    });
  });

  describe('problem fields typed per code', () => {
    const schemaOf = (name: string) => doc['components']['schemas'][name] as Json;

    it('types each code’s own fields in the document: a schema per code, the union told apart by code', () => {
      expect(schemaOf('ProblemDetails')['discriminator']['propertyName']).to.equal('code');
      expect(schemaOf('TierProblem')['properties']).to.deep.include({ required_tier: { type: 'string', enum: [...TIERS], description: schemaOf('TierProblem')['properties']['required_tier']['description'] } });
      const required = (name: string) => schemaOf(name)['required'] as string[];
      expect(required('TierProblem')).to.include.members(['required_tier', 'tier']);
      expect(required('LimitExceededProblem')).to.include('maximum');
      expect(schemaOf('LimitExceededProblem')['properties']['maximum']).to.include({ type: 'integer' });
      expect(required('CoverageProblem')).to.include.members(['coverage', 'outside_coverage']);
      expect(required('RateLimitedProblem')).to.include('retry_after_seconds');
      expect(required('CreditsExhaustedProblem')).to.include.members(['credits_remaining', 'prepaid_credits', 'cost', 'resets_at']);
      expect(schemaOf('NotFoundProblem')['properties']).to.have.property('unknown_tickers');
      for (const name of ['TierProblem', 'BadRequestProblem', 'UnauthorizedProblem', 'InternalProblem']) expect(schemaOf(name)['additionalProperties'], name).to.equal(false);
    });

    it('sends each problem with exactly the fields its code declares, valid against its schema', async () => {
      const checker = new ContractChecker(doc as OpenApiDocument, TRANSPORT_HEADERS);
      const ops = operationsOf(doc as OpenApiDocument);
      const free = await newKey('free');
      const quant = await createAccountWithKey(server.services, { tier: 'quant' });
      const throttled = await createAccountWithKey(server.services, { tier: 'quant' });
      await setRateLimit(server.services, throttled.account_id, 1);
      const broke = await createAccountWithKey(server.services, { tier: 'quant' });
      await server.services.ledger.debit(broke.account_id, { request_id: 'contract-exact-setup', endpoint: 'history', channel: 'rest', cost: PLANS.quant.monthly_allowance! });
      await server.services.runner.waitForHead();
      for (let i = 0; i < 10; i++) await call('POST', '/v1/webhooks', quant.key, { json: { event_type: 'score_move', url: `https://93.184.215.14/n${i}` } });
      const universe = async (key: string) => (await call('GET', '/v1/coverage', key)).body['tickers'] as string[];
      const freeUniverse = new Set(await universe(free));
      const hidden = (await universe(quant.key)).find((t) => !freeUniverse.has(t))!;
      const burst = await Promise.all(Array.from({ length: 4 }, () => call('GET', '/v1/usage', throttled.key)));

      const cases: [string, string, Awaited<ReturnType<typeof call>>, Json][] = [
        ['GET /v1/earnings', 'tier', await call('GET', '/v1/earnings', free), { required_tier: 'builder', tier: 'free' }],
        ['GET /v1/screener', 'limit_exceeded', await call('GET', '/v1/screener?limit=651', quant.key), { maximum: 650 }],
        ['GET /v1/usage/ledger', 'limit_exceeded', await call('GET', '/v1/usage/ledger?limit=100000', quant.key), { maximum: 1000 }],
        ['POST /v1/webhooks', 'limit_exceeded', await call('POST', '/v1/webhooks', quant.key, { json: { event_type: 'score_move', url: 'https://93.184.215.14/x' } }), { maximum: 10 }],
        ['GET /v1/scores/{ticker}', 'coverage', await call('GET', `/v1/scores/${hidden}`, free), { coverage: 'top100', outside_coverage: [hidden] }],
        ['GET /v1/scores/history', 'not_found', await call('GET', '/v1/scores/history?tickers=AAPL,ZZZZZ&start=2019-03-25', quant.key), { unknown_tickers: ['ZZZZZ'] }],
        ['GET /v1/usage/ledger', 'bad_request', await call('GET', '/v1/usage/ledger?cursor=zzz', quant.key), { errors: [{ parameter: 'cursor', message: 'is not valid for this query' }] }],
        ['GET /v1/usage/ledger', 'bad_request', await call('GET', '/v1/usage/ledger?month=2026-13', quant.key), { errors: [{ parameter: 'month', message: 'must be YYYY-MM' }] }],
        ['GET /v1/requests', 'bad_request', await call('GET', '/v1/requests?status=6xx', quant.key), { errors: [{ parameter: 'status', message: 'must be 2xx, 3xx, 4xx or 5xx' }] }],
        ['GET /v1/usage', 'rate_limited', burst.find((r) => r.status === 429)!, { per_second: 1 }],
        ['GET /v1/scores/{ticker}', 'credits_exhausted', await call('GET', '/v1/scores/AAPL', broke.key), { prepaid_credits: 0, cost: 2 }],
      ];
      for (const [id, code, r, fields] of cases) {
        const where = `${id} ${code}`;
        expect(r, `${where}: no such answer`).to.not.equal(undefined);
        expect(r.body['code'], `${where}: ${r.text.slice(0, 200)}`).to.equal(code);
        expect(r.body, where).to.deep.include(fields);
        // Exactly the standard fields and the code's own (the schema has additionalProperties: false).
        const op = ops.find((o) => o.id === id)!;
        const violations = checker.check(op, { status: r.status, headers: Object.fromEntries([...r.headers]), body: Buffer.from(r.text) }).filter((v) => v.kind === 'schema');
        expect(violations, where).to.deep.equal([]);
      }
    });
  });

  // Last: it moves the service's clock to May, for an invoice of April.
  describe('Cache-Control: no-store on every private answer', () => {
    const PUBLIC_IP = '93.184.215.14'; // registered as an IP literal, never contacted
    const PRIVATE = ['/v1/usage', '/v1/usage/ledger', '/v1/requests', '/v1/webhooks', '/v1/webhooks/{webhook_id}', '/v1/webhooks/{webhook_id}/test', '/v1/webhooks/{webhook_id}/enable', '/v1/webhooks/{webhook_id}/rotate-secret', '/v1/webhooks/{webhook_id}/deliveries', '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend', '/v1/webhooks/{webhook_id}/resend-failed'];

    it('declares it on every response of the usage, ledger, request log and webhook operations (but the 431 and the 408 node may answer first), and on no other', () => {
      for (const op of operationsOf(doc as OpenApiDocument)) {
        for (const [status, response] of Object.entries<Json>(doc['paths'][op.path][op.method.toLowerCase()].responses)) {
          const ref = response['headers']?.['Cache-Control']?.['$ref'] as string | undefined;
          const expected = PRIVATE.includes(op.path) && status !== '431' && status !== '408' ? '#/components/headers/PrivateCacheControl' : undefined;
          if (expected || ref === '#/components/headers/PrivateCacheControl') expect(ref, `${op.id} ${status}`).to.equal(expected);
        }
      }
      expect(doc['components']['headers']['PrivateCacheControl']).to.deep.include({ required: true, schema: { type: 'string', enum: ['no-store'] } });
    });

    it('sends it on the usage, the ledger, the request log and every webhook answer, the 201 with the secret and the refusals included', async () => {
      const key = await newKey('quant');
      const created = await call('POST', '/v1/webhooks', key, { json: { event_type: 'score_move', url: `https://${PUBLIC_IP}/hook` } });
      expect(created.status, created.text).to.equal(201);
      expect(created.body['secret']).to.be.a('string');
      const id = created.body['id'] as number;
      const answers = [
        ['POST /v1/webhooks 201', created],
        ['GET /v1/usage', await call('GET', '/v1/usage', key)],
        ['GET /v1/usage/ledger', await call('GET', '/v1/usage/ledger?limit=5', key)],
        ['GET /v1/requests', await call('GET', '/v1/requests?limit=5', key)],
        ['GET /v1/requests 400', await call('GET', '/v1/requests?status=6xx', key)],
        ['GET /v1/webhooks', await call('GET', '/v1/webhooks', key)],
        ['GET deliveries', await call('GET', `/v1/webhooks/${id}/deliveries`, key)],
        ['POST enable', await call('POST', `/v1/webhooks/${id}/enable`, key)],
        ['GET /v1/usage 401', await call('GET', '/v1/usage', null)],
        ['GET /v1/usage/ledger 400', await call('GET', '/v1/usage/ledger?limit=abc', key)],
        ['POST test 404', await call('POST', '/v1/webhooks/999999/test', key)],
        ['DELETE', await call('DELETE', `/v1/webhooks/${id}`, key)],
      ] as const;
      for (const [what, r] of answers) {
        expect(r.status, `${what}: ${r.text.slice(0, 200)}`).to.be.oneOf([200, 201, 400, 401, 404]);
        expect(r.headers.get('cache-control'), what).to.equal('no-store');
      }
      // A public read is not private.
      expect((await call('GET', '/v1/scores/AAPL', key)).headers.get('cache-control')).to.equal(null);
    });

    it('sends it on the account pages and the invoices', async () => {
      const email = 'no-store@example.test';
      const { key } = await createAccountWithKey(server.services, { tier: 'quant', email });
      await server.services.runner.waitForHead();
      const signIn = async () => {
        const b = new FormBrowser(() => server.url, '10.28.0.1');
        const before = new Set(linksTo(server.dir, email));
        const form = await b.request('/account/sign-in');
        expect(form.headers.get('cache-control'), 'the sign-in page').to.equal('no-store');
        await b.submit(form.text, '/account/sign-in', { email });
        const token = linksTo(server.dir, email).find((t) => !before.has(t))!;
        const confirm = await b.request(`/account/sign-in/${token}`);
        expect(confirm.headers.get('cache-control'), 'the sign-in link').to.equal('no-store');
        const answer = await b.submit(confirm.text, `/account/sign-in/${token}`);
        expect(answer.headers.get('cache-control'), 'the signed-in answer').to.equal('no-store');
        return b;
      };
      let b = await signIn();
      const hook = await call('POST', '/v1/webhooks', key, { json: { event_type: 'score_move', url: `https://${PUBLIC_IP}/page` } });
      await server.services.runner.waitForHead();
      for (const path of ['/account', '/account/webhooks', `/account/webhooks/${hook.body['id']}`, '/account/usage/export?month=2019-04&file=ledger', '/account/invoices/NO-SUCH-2019-04.pdf']) {
        const r = await b.request(path);
        expect(r.status, path).to.equal(path.includes('NO-SUCH') ? 404 : 200);
        expect(r.headers.get('cache-control'), path).to.equal('no-store');
      }
      // No delivery to the address once the clock moves: the hook goes first.
      expect((await call('DELETE', `/v1/webhooks/${hook.body['id']}`, key)).status).to.equal(200);
      // April closes with the first call of May; its invoice follows.
      (server.services.clock as ReturnType<typeof fixedClock>).set('2019-05-02T09:00:00Z');
      expect((await call('GET', '/v1/scores/AAPL', key)).status).to.equal(200);
      await server.services.runner.waitForHead();
      await server.running.invoices!.drain();
      await server.services.runner.waitForHead();
      b = await signIn();
      const page = await b.request('/account');
      const accountId = /Signed in as[\s\S]*?<code>([^<]+)<\/code>/.exec(page.text)?.[1] ?? '';
      const invoice = ((await server.services.events.readStream(invoicesStream(accountId)))[0]?.data as { invoice: { number: string } } | undefined)?.invoice.number;
      expect(invoice, 'an invoice of April').to.be.a('string');
      for (const file of [`${invoice}.pdf`, `${invoice}.json`]) {
        const r = await b.request(`/account/invoices/${file}`);
        expect(r.status, file).to.equal(200);
        expect(r.headers.get('cache-control'), file).to.equal('no-store');
      }
    });
  });
});
