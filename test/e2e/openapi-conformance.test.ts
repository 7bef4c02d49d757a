import { expect } from 'chai';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { runExport } from '../../commands/export-bundles/export-run.handler.js';
import { createAccountWithKey, issueKey, revokeKey, setRateLimit, type IssuedKey } from '../../commands/manage-keys/keys.handler.js';
import { TRANSPORT_HEADERS } from '../../src/web/response-headers.js';
import { ANONYMOUS_RATE_PER_SECOND, PLANS, RATE_BURST_FACTOR, TIERS, type Tier } from '../../src/domain/plans.js';
import { RATE_CARD, rateKeyOf } from '../../src/domain/rate-card.js';
import { ContractChecker, operationsOf, type ObservedResponse, type OpenApiDocument, type Operation, type Violation } from '../support/openapi-contract.js';
import { until } from '../support/processes.js';
import { receiverCertificate } from '../support/receiver-certificate.js';
import { startTestServer, tempDir, type TestServer } from '../support/server.js';

// 12:00 UTC on Monday 2019-04-01: live keys see Friday 2019-03-29, free keys a week earlier.
const NOW = '2019-04-01T12:00:00Z';

type Body = Record<string, any>;

/** What a call may read of the call before it in the same operation (an ETag, a cursor). */
interface Previous {
  body: Body;
  headers: Record<string, string>;
}

/** One call of an operation, and the status it must get. */
interface Call {
  what: string;
  expect: number;
  /** Path and query; a function of the previous call's answer when it needs one of its values. */
  path: string | ((prev: Previous) => string);
  /** The API key sent; null for none. The operation's key when absent. */
  key?: string | null;
  headers?: Record<string, string> | ((prev: Previous) => Record<string, string>);
  json?: unknown;
  body?: string;
  contentType?: string;
  /** Sent this many times at once; `expect` must be among the answers (a rate limit). */
  burst?: number;
}

/** The calls of one operation: its key, its valid calls (2xx, 3xx) and its own invalid ones. */
interface OperationCalls {
  key: string;
  valid: Call[];
  invalid: Call[];
}

/** A response, and its body as text. */
interface Answer extends ObservedResponse {
  text: string;
}

const keepAlive = new Agent({ keepAlive: true });

/**
 * One HTTP exchange with node's client: the headers exactly as sent (fetch adds its own), the body
 * decoded of its Content-Encoding. A fresh connection when the server will close it (431).
 */
function send(base: string, method: string, path: string, headers: Record<string, string>, body: string | undefined, fresh = false): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: url.port, path: `${url.pathname}${url.search}`, method, headers: { 'Accept-Encoding': 'gzip, br', ...headers }, agent: fresh ? false : keepAlive },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const encoding = res.headers['content-encoding'];
          const bytes = encoding === 'gzip' ? gunzipSync(raw) : encoding === 'br' ? brotliDecompressSync(raw) : encoding === 'deflate' ? inflateSync(raw) : raw;
          const out: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
          resolve({ status: res.statusCode!, headers: out, body: bytes, text: bytes.toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The API contract, call by call: for every operation of the served OpenAPI document, valid calls
 * and invalid ones, each answer checked against the document (status declared, media type
 * declared, headers declared or transport, required headers present, header values and JSON
 * bodies valid against their schemas with ajv). A new operation fails the suite until it has calls here.
 */
describe('The API contract: every operation, called validly and invalidly, answers as the OpenAPI document says', function () {
  this.timeout(180_000);
  let server: TestServer;
  let receiver: Server;
  const certDir = tempDir('scores-conformance-cert-');
  let operations: Operation[] = [];
  let checker: ContractChecker;
  const missing: string[] = [];
  let stale: string[] = [];
  const violations: (Violation & { call: string })[] = [];
  const unexpected: string[] = [];
  const counts = new Map<string, { valid: number; invalid: number }>();
  let responses = 0;
  let undeclaredMethods = 0;

  before(async () => {
    const pems = await receiverCertificate(certDir);
    receiver = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    // TRUST_PROXY: each key-less call names its own client in X-Forwarded-For (see `anonymous` below).
    server = await startTestServer({ now: NOW, env: { WEBHOOK_CA_FILE: pems.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8', TRUST_PROXY: 'loopback' } });
    const s = server.services;

    // A key per tier, its rate raised so that a few hundred calls in a row are never refused for
    // it (the RateLimit headers stay, with the raised policy).
    const account = async (tier: Tier, rate = 100_000) => {
      const k = await createAccountWithKey(s, { tier });
      await setRateLimit(s, k.account_id, rate);
      return k;
    };
    const keys = {} as Record<Tier, string>;
    const issued = {} as Record<Tier, IssuedKey>;
    for (const tier of TIERS) keys[tier] = (issued[tier] = await account(tier)).key;
    // Keys of the quant account: one whose limits are changed, one with limits of its own (which may change no key).
    const target = (await issueKey(s, issued.quant.account_id, 'conformance-target')).key_id;
    const bounded = (await issueKey(s, issued.quant.account_id, 'conformance-bounded', { daily_credit_limit: 10 })).key;
    const other = (await account('quant')).key;
    const revoked = await account('quant');
    await s.runner.waitForHead();
    await revokeKey(s, revoked.key_id);
    // One request per second, a burst of two: four at once get at least two 429s.
    const throttled = (await account('quant', 1)).key;
    // A whole month's allowance spent, overage off: a paid call is refused 429 credits_exhausted.
    const broke = await account('quant');
    await s.ledger.debit(broke.account_id, { request_id: 'conformance-setup', endpoint: 'history', channel: 'rest', cost: PLANS.quant.monthly_allowance! });
    const full = (await account('quant')).key;
    await s.runner.waitForHead();

    const doc = (await send(server.url, 'GET', '/openapi.json', {}, undefined)).text;
    const document = JSON.parse(doc) as OpenApiDocument;
    operations = operationsOf(document);
    checker = new ContractChecker(document, TRANSPORT_HEADERS);

    // Set-up over plain HTTP (not checked): webhooks to test, enable, list and delete, an account
    // at its webhook limit, a ledger with entries to page, an export bundle to download.
    const post = async (path: string, key: string, json?: unknown) => {
      const r = await send(server.url, 'POST', path, { 'X-API-Key': key, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }) }, json === undefined ? undefined : JSON.stringify(json));
      expect(r.status, `${path}: ${r.text}`).to.be.oneOf([200, 201]);
      return JSON.parse(r.text) as Body;
    };
    const hook = (await post('/v1/webhooks', keys.quant, { event_type: 'score_move', url: receiverUrl }))['id'] as number;
    const doomed = (await post('/v1/webhooks', keys.quant, { event_type: 'divergence_event', url: receiverUrl }))['id'] as number;
    await post(`/v1/webhooks/${hook}/test`, keys.quant);
    for (let i = 0; i < 10; i++) await post('/v1/webhooks', full, { event_type: 'score_move', url: `${receiverUrl}?n=${i}` });
    for (let i = 0; i < 2; i++) await send(server.url, 'GET', '/v1/scores/AAPL', { 'X-API-Key': keys.quant }, undefined);
    const exported = await runExport({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids }, { trigger: 'cli' });
    expect(exported.status).to.equal('completed');
    let file = '';
    /** The test delivery's message id: the delivery a resend names. */
    let delivery = '';
    await until(async () => {
      const r = await send(server.url, 'GET', '/v1/bulk/exports', { 'X-API-Key': keys.quant }, undefined);
      const listed = (JSON.parse(r.text) as { exports: { url: string }[] }).exports;
      file = listed[0] ? new URL(listed[0].url).pathname : '';
      const deliveries = await send(server.url, 'GET', `/v1/webhooks/${hook}/deliveries`, { 'X-API-Key': keys.quant }, undefined);
      delivery = deliveries.status === 200 ? ((JSON.parse(deliveries.text) as { deliveries: { message_id: string }[] }).deliveries[0]?.message_id ?? '') : '';
      return file !== '' && delivery !== '';
    }, 10_000, 50);
    const [bundle, name] = file.split('/').slice(-2) as [string, string];
    // A stock a free key cannot see (outside its top 100): 403 coverage.
    const universe = async (key: string) => (JSON.parse((await send(server.url, 'GET', '/v1/coverage', { 'X-API-Key': key }, undefined)).text) as { tickers: string[] }).tickers;
    const freeUniverse = new Set(await universe(keys.free));
    const hidden = (await universe(keys.quant)).find((t) => !freeUniverse.has(t))!;

    const json = (what: string, expectStatus: number, path: string, body: unknown, key?: string): Call => ({ what, expect: expectStatus, path, json: body, ...(key ? { key } : {}) });
    const oversized = (path: string): Call => ({ what: 'a body over 16 KiB', expect: 413, path, json: { note: 'x'.repeat(17 * 1024) } });
    const textBody = (path: string): Call => ({ what: 'a text/plain body', expect: 415, path, body: 'hello', contentType: 'text/plain' });
    const webhookId = (path: (id: string) => string): Call[] => [
      { what: 'webhook_id not an integer', expect: 400, path: path('abc') },
      { what: 'webhook_id below 1', expect: 400, path: path('-1') },
      { what: 'unknown webhook_id', expect: 404, path: path('999999') },
      { what: "another account's webhook", expect: 404, path: path(String(hook)), key: other },
    ];
    const conditional = (path: string): Call[] => [
      { what: 'plain', expect: 200, path },
      { what: 'If-None-Match with the ETag just received: 304', expect: 304, path, headers: (prev) => ({ 'If-None-Match': prev.headers['etag'] ?? '"none"' }) },
    ];

    const TABLE: Record<string, OperationCalls> = {
      'GET /v1/webhooks': { key: keys.quant, valid: [{ what: 'list', expect: 200, path: '/v1/webhooks' }], invalid: [] },
      'GET /v1/keys': {
        key: keys.quant,
        valid: [
          { what: 'list', expect: 200, path: '/v1/keys' },
          { what: 'free', expect: 200, path: '/v1/keys', key: keys.free },
        ],
        invalid: [],
      },
      'PATCH /v1/keys/{key_id}': {
        key: keys.quant,
        valid: [
          json('a daily limit', 200, `/v1/keys/${target}`, { daily_credit_limit: 1000 }),
          json('every field', 200, `/v1/keys/${target}`, { daily_credit_limit: null, monthly_credit_limit: 5000, expires_at: '2099-01-01T00:00:00Z', scope: 'read_only', operations: ['scores', 'get_usage'] }),
        ],
        invalid: [
          json('a limit of 0', 400, `/v1/keys/${target}`, { daily_credit_limit: 0 }),
          json('an unknown field', 400, `/v1/keys/${target}`, { anything: 1 }),
          json('an unknown operation', 400, `/v1/keys/${target}`, { operations: ['teleport'] }),
          json('an expiry in the past', 400, `/v1/keys/${target}`, { expires_at: '2001-01-01T00:00:00Z' }),
          json("another account's key", 404, `/v1/keys/${target}`, { daily_credit_limit: 5 }, other),
          json('a key with limits of its own', 403, `/v1/keys/${target}`, { daily_credit_limit: 5 }, bounded),
          oversized(`/v1/keys/${target}`),
          textBody(`/v1/keys/${target}`),
        ],
      },
      'POST /v1/webhooks': {
        key: keys.quant,
        valid: [json('register', 201, '/v1/webhooks', { event_type: 'score_move', url: receiverUrl })],
        invalid: [
          { what: 'malformed JSON', expect: 400, path: '/v1/webhooks', body: '{"event_type":', contentType: 'application/json' },
          json('an http URL', 400, '/v1/webhooks', { event_type: 'score_move', url: 'http://hooks.example.com/x' }),
          json('an unknown field', 400, '/v1/webhooks', { event_type: 'score_move', url: receiverUrl, secret: 'x' }),
          json('an unknown event_type', 400, '/v1/webhooks', { event_type: 'price_move', url: receiverUrl }),
          oversized('/v1/webhooks'),
          textBody('/v1/webhooks'),
          json("an account's 11th webhook", 422, '/v1/webhooks', { event_type: 'score_move', url: receiverUrl }, full),
        ],
      },
      'GET /v1/webhooks/{webhook_id}/deliveries': {
        key: keys.quant,
        valid: [{ what: 'deliveries', expect: 200, path: `/v1/webhooks/${hook}/deliveries` }],
        invalid: webhookId((id) => `/v1/webhooks/${id}/deliveries`),
      },
      'GET /v1/usage/ledger': {
        key: keys.quant,
        valid: [
          { what: 'first page of one', expect: 200, path: '/v1/usage/ledger?limit=1' },
          { what: 'the next page, by its cursor', expect: 200, path: (prev) => `/v1/usage/ledger?limit=1&cursor=${encodeURIComponent(String(prev.body['next_cursor']))}` },
          { what: 'a month', expect: 200, path: '/v1/usage/ledger?month=2019-04' },
        ],
        invalid: [
          { what: 'limit not an integer', expect: 400, path: '/v1/usage/ledger?limit=abc' },
          { what: 'limit above its maximum', expect: 422, path: '/v1/usage/ledger?limit=100000' },
          { what: 'month 13', expect: 400, path: '/v1/usage/ledger?month=2026-13' },
          { what: 'a cursor it never gave', expect: 400, path: '/v1/usage/ledger?cursor=zzz' },
        ],
      },
      'GET /v1/requests': {
        key: keys.quant,
        valid: [
          { what: 'first page of one', expect: 200, path: '/v1/requests?limit=1' },
          { what: 'the next page, by its cursor', expect: 200, path: (prev) => `/v1/requests?limit=1&cursor=${encodeURIComponent(String(prev.body['next_cursor']))}` },
          { what: 'refused calls of one operation on a day', expect: 200, path: '/v1/requests?status=4xx&operation=scores&day=2019-04-10' },
        ],
        invalid: [
          { what: 'limit not an integer', expect: 400, path: '/v1/requests?limit=abc' },
          { what: 'limit above its maximum', expect: 422, path: '/v1/requests?limit=100000' },
          { what: 'a status class that is none', expect: 400, path: '/v1/requests?status=6xx' },
          { what: 'a cursor it never gave', expect: 400, path: '/v1/requests?cursor=zzz' },
        ],
      },
      'GET /v1/usage': {
        key: keys.quant,
        valid: [
          { what: 'quant', expect: 200, path: '/v1/usage' },
          { what: 'enterprise (unmetered)', expect: 200, path: '/v1/usage', key: keys.enterprise },
          { what: 'free', expect: 200, path: '/v1/usage', key: keys.free },
        ],
        invalid: [],
      },
      'GET /v1/track-record': { key: keys.quant, valid: conditional('/v1/track-record'), invalid: [] },
      'GET /v1/themes': {
        key: keys.quant,
        valid: [
          { what: 'quant', expect: 200, path: '/v1/themes' },
          { what: 'free', expect: 200, path: '/v1/themes', key: keys.free },
        ],
        invalid: [],
      },
      'GET /v1/themes/{slug}': {
        key: keys.quant,
        valid: [{ what: 'a theme', expect: 200, path: '/v1/themes/ai-infrastructure' }],
        invalid: [
          { what: 'unknown slug', expect: 404, path: '/v1/themes/no-such-theme' },
          { what: 'malformed slug', expect: 400, path: '/v1/themes/NOT%20A%20SLUG' },
        ],
      },
      'GET /v1/scores/social-heat/{ticker}': {
        key: keys.quant,
        valid: [
          { what: 'a month', expect: 200, path: '/v1/scores/social-heat/AAPL?start=2019-03-01&end=2019-03-29' },
          { what: 'free, defaults', expect: 200, path: '/v1/scores/social-heat/AAPL', key: keys.free },
          { what: 'end before start: an empty window', expect: 200, path: '/v1/scores/social-heat/AAPL?start=2019-03-10&end=2019-03-01' },
        ],
        invalid: [
          { what: 'unknown ticker', expect: 404, path: '/v1/scores/social-heat/NOPEX' },
          { what: 'February 30th', expect: 400, path: '/v1/scores/social-heat/AAPL?start=2019-02-30' },
        ],
      },
      'GET /v1/signals': {
        key: keys.quant,
        valid: [{ what: 'five', expect: 200, path: '/v1/signals?limit=5' }],
        invalid: [
          { what: 'limit not an integer', expect: 400, path: '/v1/signals?limit=abc' },
          { what: 'limit 0', expect: 400, path: '/v1/signals?limit=0' },
          { what: 'limit above its maximum', expect: 422, path: '/v1/signals?limit=201' },
        ],
      },
      'GET /v1/screener': {
        key: keys.quant,
        valid: [
          { what: 'min_score and limit', expect: 200, path: '/v1/screener?min_score=60&limit=5' },
          { what: 'free', expect: 200, path: '/v1/screener?limit=3', key: keys.free },
        ],
        invalid: [
          { what: 'limit above its maximum', expect: 422, path: '/v1/screener?limit=651' },
          { what: 'min_score not an integer', expect: 400, path: '/v1/screener?min_score=abc' },
          { what: 'min_score above 100', expect: 400, path: '/v1/screener?min_score=101' },
        ],
      },
      'GET /v1/scores/{ticker}/history': {
        key: keys.quant,
        valid: [
          { what: 'a month', expect: 200, path: '/v1/scores/MSFT/history?start=2019-03-01&end=2019-03-29' },
          { what: 'as known at an instant', expect: 200, path: '/v1/scores/MSFT/history?start=2019-03-18&end=2019-03-22&as_known_at=2019-03-25T22:00:00Z' },
          { what: 'free, defaults', expect: 200, path: '/v1/scores/MSFT/history', key: keys.free },
        ],
        invalid: [
          { what: 'unknown ticker', expect: 404, path: '/v1/scores/NOPEX/history' },
          { what: 'February 30th', expect: 400, path: '/v1/scores/MSFT/history?start=2019-02-30' },
          { what: 'as_known_at not a date', expect: 400, path: '/v1/scores/MSFT/history?as_known_at=yesterday' },
        ],
      },
      'GET /v1/scores/history': {
        key: keys.quant,
        valid: [
          { what: 'two tickers', expect: 200, path: '/v1/scores/history?tickers=AAPL,MSFT&start=2019-03-25' },
          { what: 'restated since', expect: 200, path: '/v1/scores/history?tickers=AAPL&start=2019-03-01&since=2019-03-27' },
          { what: 'end before start: an empty window', expect: 200, path: '/v1/scores/history?tickers=AAPL&start=2019-03-28&end=2019-03-01' },
        ],
        invalid: [
          { what: 'unknown ticker', expect: 404, path: '/v1/scores/history?tickers=ZZZZZ&start=2019-03-25' },
          { what: '51 tickers', expect: 400, path: `/v1/scores/history?start=2019-03-25&tickers=${Array.from({ length: 51 }, (_, i) => `T${i}`).join(',')}` },
          { what: 'an empty tickers list', expect: 400, path: '/v1/scores/history?tickers=&start=2019-03-25' },
        ],
      },
      'GET /v1/scores/{ticker}': {
        key: keys.quant,
        valid: [
          { what: 'quant', expect: 200, path: '/v1/scores/AAPL' },
          { what: 'free, lower case', expect: 200, path: '/v1/scores/aapl', key: keys.free },
          { what: 'enterprise (unmetered)', expect: 200, path: '/v1/scores/AAPL', key: keys.enterprise },
        ],
        invalid: [
          { what: 'unknown ticker', expect: 404, path: '/v1/scores/NOPEX' },
          { what: 'a stock outside the free universe', expect: 403, path: `/v1/scores/${hidden}`, key: keys.free },
        ],
      },
      'GET /v1/meta': { key: keys.quant, valid: conditional('/v1/meta'), invalid: [] },
      'GET /v1/earnings': {
        key: keys.builder,
        valid: [{ what: 'two weeks', expect: 200, path: '/v1/earnings?days=14' }],
        invalid: [
          { what: 'days above its maximum', expect: 422, path: '/v1/earnings?days=61' },
          { what: 'days not an integer', expect: 400, path: '/v1/earnings?days=x' },
          { what: 'days negative', expect: 400, path: '/v1/earnings?days=-1' },
        ],
      },
      'GET /v1/divergence/open': { key: keys.quant, valid: [{ what: 'open trades', expect: 200, path: '/v1/divergence/open' }], invalid: [] },
      'GET /v1/divergence/events': {
        key: keys.quant,
        valid: [{ what: 'since a date', expect: 200, path: '/v1/divergence/events?since=2019-03-01' }],
        invalid: [{ what: 'February 30th', expect: 400, path: '/v1/divergence/events?since=2019-02-30' }],
      },
      'GET /v1/divergence': {
        key: keys.quant,
        valid: [
          { what: 'bull, three', expect: 200, path: '/v1/divergence?direction=bull&limit=3' },
          { what: 'free', expect: 200, path: '/v1/divergence?limit=2', key: keys.free },
        ],
        invalid: [
          { what: 'direction sideways', expect: 400, path: '/v1/divergence?direction=sideways' },
          { what: 'limit above its maximum', expect: 422, path: '/v1/divergence?limit=101' },
          { what: 'limit not an integer', expect: 400, path: '/v1/divergence?limit=abc' },
        ],
      },
      'GET /v1/coverage': {
        key: keys.quant,
        valid: [...conditional('/v1/coverage'), { what: 'free, since a date', expect: 200, path: '/v1/coverage?since=2019-03-01', key: keys.free }],
        invalid: [{ what: 'since not a date', expect: 400, path: '/v1/coverage?since=x' }],
      },
      'GET /v1/bulk/exports': { key: keys.quant, valid: [{ what: 'the listing', expect: 200, path: '/v1/bulk/exports' }], invalid: [] },
      'DELETE /v1/webhooks/{webhook_id}': {
        key: keys.quant,
        valid: [{ what: 'delete', expect: 200, path: `/v1/webhooks/${doomed}` }],
        invalid: webhookId((id) => `/v1/webhooks/${id}`),
      },
      'POST /v1/webhooks/{webhook_id}/test': {
        key: keys.quant,
        valid: [json('an empty object', 200, `/v1/webhooks/${hook}/test`, {}), { what: 'no body', expect: 200, path: `/v1/webhooks/${hook}/test` }],
        invalid: [
          ...webhookId((id) => `/v1/webhooks/${id}/test`),
          json('a field', 400, `/v1/webhooks/${hook}/test`, { anything: 1 }),
          oversized(`/v1/webhooks/${hook}/test`),
          textBody(`/v1/webhooks/${hook}/test`),
        ],
      },
      'POST /v1/webhooks/{webhook_id}/enable': {
        key: keys.quant,
        valid: [{ what: 'no body', expect: 200, path: `/v1/webhooks/${hook}/enable` }, json('an empty object', 200, `/v1/webhooks/${hook}/enable`, {})],
        invalid: [
          ...webhookId((id) => `/v1/webhooks/${id}/enable`),
          json('a field', 400, `/v1/webhooks/${hook}/enable`, { anything: 1 }),
          oversized(`/v1/webhooks/${hook}/enable`),
          textBody(`/v1/webhooks/${hook}/enable`),
        ],
      },
      'POST /v1/webhooks/{webhook_id}/rotate-secret': {
        key: keys.quant,
        valid: [{ what: 'no body', expect: 200, path: `/v1/webhooks/${hook}/rotate-secret` }, json('an overlap', 200, `/v1/webhooks/${hook}/rotate-secret`, { overlap_hours: 0 })],
        invalid: [
          ...webhookId((id) => `/v1/webhooks/${id}/rotate-secret`),
          json('an unknown field', 400, `/v1/webhooks/${hook}/rotate-secret`, { anything: 1 }),
          json('an overlap over a week', 400, `/v1/webhooks/${hook}/rotate-secret`, { overlap_hours: 169 }),
          json('a fractional overlap', 400, `/v1/webhooks/${hook}/rotate-secret`, { overlap_hours: 1.5 }),
          oversized(`/v1/webhooks/${hook}/rotate-secret`),
          textBody(`/v1/webhooks/${hook}/rotate-secret`),
        ],
      },
      'POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend': {
        key: keys.quant,
        valid: [
          { what: 'no body', expect: 202, path: `/v1/webhooks/${hook}/deliveries/${delivery}/resend` },
          { ...json('an empty object, an Idempotency-Key', 202, `/v1/webhooks/${hook}/deliveries/${delivery}/resend`, {}), headers: { 'Idempotency-Key': 'conformance-1' } },
        ],
        invalid: [
          ...webhookId((id) => `/v1/webhooks/${id}/deliveries/${delivery}/resend`),
          { what: 'delivery_id not a message id', expect: 400, path: `/v1/webhooks/${hook}/deliveries/42/resend` },
          { what: 'an unknown delivery', expect: 404, path: `/v1/webhooks/${hook}/deliveries/msg_unknown/resend` },
          { what: 'an Idempotency-Key with a space', expect: 400, path: `/v1/webhooks/${hook}/deliveries/${delivery}/resend`, headers: { 'Idempotency-Key': 'a b' } },
          json('a field', 400, `/v1/webhooks/${hook}/deliveries/${delivery}/resend`, { anything: 1 }),
          oversized(`/v1/webhooks/${hook}/deliveries/${delivery}/resend`),
          textBody(`/v1/webhooks/${hook}/deliveries/${delivery}/resend`),
        ],
      },
      'POST /v1/webhooks/{webhook_id}/resend-failed': {
        key: keys.quant,
        valid: [json('since an instant', 202, `/v1/webhooks/${hook}/resend-failed`, { since: '2019-03-01T00:00:00Z' }), json('since a timestamp', 202, `/v1/webhooks/${hook}/resend-failed`, { since: '2019-03-01 00:00:00' })],
        invalid: [
          ...webhookId((id) => `/v1/webhooks/${id}/resend-failed`).map((c) => ({ ...c, json: { since: '2019-03-01T00:00:00Z' } })),
          json('no since', 400, `/v1/webhooks/${hook}/resend-failed`, {}),
          json('since not an instant', 400, `/v1/webhooks/${hook}/resend-failed`, { since: 'yesterday' }),
          json('an unknown field', 400, `/v1/webhooks/${hook}/resend-failed`, { since: '2019-03-01T00:00:00Z', anything: 1 }),
          oversized(`/v1/webhooks/${hook}/resend-failed`),
          textBody(`/v1/webhooks/${hook}/resend-failed`),
        ],
      },
      'GET /v1/bulk/exports/{bundle_id}/{name}': {
        key: keys.quant,
        valid: [
          ...conditional(file),
          { what: 'the first 100 bytes', expect: 206, path: file, headers: { Range: 'bytes=0-99' } },
        ],
        invalid: [
          { what: 'unknown bundle', expect: 404, path: `/v1/bulk/exports/no-such-bundle/${name}` },
          { what: 'unknown file', expect: 404, path: `/v1/bulk/exports/${bundle}/nothing.csv.gz` },
          { what: 'a range past the end', expect: 416, path: file, headers: { Range: 'bytes=999999999-' } },
        ],
      },
    };

    // Calls every operation gets, made from its first valid call: no key, a wrong key, a revoked
    // key, an unknown query parameter, headers over 16 KiB, a rate-limited key, a flood without a
    // key; where the rate card says so, a plan below the minimum and credits exhausted.
    let client = 0;
    // Requests without a valid key are limited per client address: each comes from its own.
    const anonymous = () => ({ 'X-Forwarded-For': `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client++ & 255}` });
    const generic = (op: Operation, template: Call): Call[] => {
      const path = typeof template.path === 'string' ? template.path : '';
      const rate = rateKeyOf(op.method, op.path);
      const min = rate ? RATE_CARD[rate].min_tier : 'free';
      const below = TIERS[PLANS[min].rank - 1];
      const calls: Call[] = [
        { ...template, what: 'no API key', expect: 401, key: null, headers: anonymous() },
        { ...template, what: 'an unknown API key', expect: 401, key: 'sk_live_conformance-not-a-key', headers: anonymous() },
        { ...template, what: 'a revoked key', expect: 403, key: revoked.key, headers: anonymous() },
        { ...template, what: 'an unknown query parameter', expect: 400, path: `${path}${path.includes('?') ? '&' : '?'}unknown_parameter=1` },
        { ...template, what: 'headers over 16 KiB', expect: 431, headers: { 'X-Padding': 'a'.repeat(17 * 1024) } },
        { ...template, what: 'over the rate limit', expect: 429, key: throttled, burst: 4 },
        // Over the per-address limit on requests without a valid key (a burst of twice its rate).
        { ...template, what: 'no key, over the per-address limit', expect: 429, key: null, headers: anonymous(), burst: ANONYMOUS_RATE_PER_SECOND * RATE_BURST_FACTOR + 4 },
      ];
      if (below) calls.push({ ...template, what: `a ${below} key (plan below ${min})`, expect: 403, key: keys[below] });
      if (rate && RATE_CARD[rate].credits > 0) calls.push({ ...template, what: 'credits exhausted', expect: 429, key: broke.key });
      return calls;
    };

    stale = Object.keys(TABLE).filter((id) => !operations.some((op) => op.id === id));
    for (const op of operations) {
      const table = TABLE[op.id];
      if (!table) {
        missing.push(op.id);
        continue;
      }
      const tally = { valid: 0, invalid: 0 };
      counts.set(op.id, tally);
      const first = table.valid[0];
      // The invalid calls first: a valid DELETE removes what they address.
      const calls = [...(first ? generic(op, first) : []), ...table.invalid, ...table.valid];
      let prev: Previous = { body: {}, headers: {} };
      for (const call of calls) {
        const path = typeof call.path === 'function' ? call.path(prev) : call.path;
        const key = call.key === undefined ? table.key : call.key;
        const headers: Record<string, string> = typeof call.headers === 'function' ? call.headers(prev) : { ...call.headers };
        if (key !== null) headers['X-API-Key'] = key;
        let body = call.body;
        if (call.json !== undefined) body = JSON.stringify(call.json);
        const contentType = call.contentType ?? (call.json !== undefined ? 'application/json' : undefined);
        if (contentType) headers['Content-Type'] = contentType;
        const fresh = call.expect === 431;
        const answers = await Promise.all(Array.from({ length: call.burst ?? 1 }, () => send(server.url, op.method, path, headers, body, fresh)));
        for (const a of answers) {
          responses++;
          for (const v of checker.check(op, a)) violations.push({ ...v, call: call.what });
        }
        const hit = answers.find((a) => a.status === call.expect);
        if (!hit) unexpected.push(`${op.id} (${call.what}, ${op.method} ${path.slice(0, 120)}): expected ${call.expect}, got ${answers.map((a) => a.status).join('/')} ${answers[0]!.text.slice(0, 200)}`);
        else if (call.expect < 400) tally.valid++;
        else tally.invalid++;
        const last = hit ?? answers[0]!;
        let parsed: Body = {};
        try {
          parsed = JSON.parse(last.text) as Body;
        } catch {
          // A file or an empty body: nothing for the next call to read.
        }
        prev = { body: parsed, headers: last.headers };
      }
    }

    // Every method a path does not declare, HEAD among them: the 405 the document describes at its
    // root (`x-method-not-allowed`), with `Allow` naming the path's methods.
    for (const path of Object.keys(document.paths)) {
      const concrete = path.replace(/\{[^}]+\}/g, 'X');
      const declared = operations.filter((op) => op.path === path).map((op) => op.method);
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !declared.includes(m))) {
        const op = { id: `${method} ${path} (undeclared)`, method, path };
        const a = await send(server.url, method, concrete, { 'X-API-Key': keys.quant }, undefined);
        responses++;
        undeclaredMethods++;
        for (const v of checker.checkUndeclaredMethod(op, a)) violations.push({ ...v, call: 'an undeclared method' });
        if (a.status !== 405 || a.headers['allow'] !== [...declared].sort().join(', ')) unexpected.push(`${op.id}: expected 405 with Allow ${[...declared].sort().join(', ')}, got ${a.status} ${a.headers['allow'] ?? ''}`);
      }
    }
  });

  after(async () => {
    await server?.stop();
    receiver?.closeAllConnections();
    receiver?.close();
    keepAlive.destroy();
    rmSync(certDir, { recursive: true, force: true });
  });

  /**
   * Violations of some kinds, one line per problem: the operations and statuses that showed it
   * ("every operation" when all did), and a call that did.
   */
  function report(kinds: Violation['kind'][]): string[] {
    const byMessage = new Map<string, { ops: Map<string, Set<number>>; call: string }>();
    for (const v of violations.filter((x) => kinds.includes(x.kind))) {
      const entry = byMessage.get(v.message) ?? { ops: new Map<string, Set<number>>(), call: v.call };
      entry.ops.set(v.operation, (entry.ops.get(v.operation) ?? new Set()).add(v.status));
      byMessage.set(v.message, entry);
    }
    return [...byMessage].map(([message, { ops, call }]) => {
      const statuses = (set: Iterable<number>) => [...new Set(set)].sort().join('/');
      const where = ops.size === operations.length ? `every operation (${statuses([...ops.values()].flatMap((x) => [...x]))})` : [...ops].map(([op, st]) => `${op} ${statuses(st)}`).join(', ');
      return `${message}: ${where} [e.g. ${call}]`;
    });
  }
  const listed = (lines: string[]) => `${lines.length}:\n      ${lines.join('\n      ')}\n`;

  it('has a checker that refuses what the document does not allow (a wrong body, status, media type or header)', () => {
    const op = operations.find((o) => o.id === 'GET /v1/scores/{ticker}')!;
    const json = { 'content-type': 'application/json; charset=utf-8' };
    const kinds = (status: number, headers: Record<string, string>, body: string) => checker.check(op, { status, headers, body: Buffer.from(body) }).map((v) => v.kind);
    expect(kinds(200, json, '{"ticker":5}')).to.include('schema');
    expect(kinds(599, json, '{}')).to.deep.equal(['status']);
    expect(kinds(200, { 'content-type': 'text/html' }, '<p>')).to.include('media type');
    expect(kinds(200, { ...json, 'x-undeclared': '1' }, '{}')).to.include('header');
    // Every response names its request (X-Request-Id), and X-Credits-Remaining is a number or `unlimited`.
    const headerProblems = (headers: Record<string, string>) => checker.check(op, { status: 404, headers: { ...json, ...headers }, body: Buffer.from('{}') }).filter((v) => v.kind === 'header').map((v) => v.message);
    expect(headerProblems({ 'x-credits-remaining': '5' })).to.deep.equal(['required header x-request-id is missing']);
    expect(headerProblems({ 'x-request-id': 'req_AAAAAAAAAAAAAAAA', 'x-credits-remaining': 'lots' })).to.have.length(1).and.match(/x-credits-remaining: "lots"/);
  });

  it('has calls for every operation: at least one valid and three invalid, each answered with the status it expects', () => {
    expect(operations.length, 'operations in the document').to.be.greaterThan(20);
    expect(missing, 'operations without calls in the table (add them)').to.deep.equal([]);
    expect(stale, 'calls for operations the document no longer has').to.deep.equal([]);
    const short = [...counts].filter(([, c]) => c.valid < 1 || c.invalid < 3).map(([id, c]) => `${id}: ${c.valid} valid, ${c.invalid} invalid`);
    expect(unexpected.length, `calls answered with another status than expected: ${listed(unexpected)}`).to.equal(0);
    expect(short.length, `operations with too few calls answered as expected: ${listed(short)}`).to.equal(0);
    expect(responses).to.be.greaterThan(operations.length * 9);
    expect(undeclaredMethods, 'undeclared methods called (each path has some)').to.be.at.least(new Set(operations.map((op) => op.path)).size);
  });

  it('answers only statuses the operation declares', () => {
    const lines = report(['status']);
    expect(lines.length, `undeclared statuses: ${listed(lines)}`).to.equal(0);
  });

  it('answers with a declared media type, or none where the response declares no content', () => {
    const lines = report(['media type']);
    expect(lines.length, `undeclared media types: ${listed(lines)}`).to.equal(0);
  });

  it('sends only declared or transport headers, every required one, each valid against its schema', () => {
    const lines = report(['header']);
    expect(lines.length, `header violations: ${listed(lines)}`).to.equal(0);
  });

  it('sends JSON bodies valid against the declared schema (ajv)', () => {
    const lines = report(['schema']);
    if (checker.unknownFormats.size) console.log(`      formats checked by type and pattern only (unknown to ajv-formats): ${[...checker.unknownFormats].sort().join(', ')}`);
    expect(lines.length, `schema violations: ${listed(lines)}`).to.equal(0);
  });
});
