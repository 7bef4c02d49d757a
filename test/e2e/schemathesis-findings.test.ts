import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { startTestServer, type TestServer } from '../support/server.js';

type Json = Record<string, any>;

// ajv-formats is CommonJS: under ESM its default export is the module object on some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

// 12:00 UTC on Monday 2019-04-01: live keys see Friday 2019-03-29.
const NOW = '2019-04-01T12:00:00Z';

/**
 * Issue 32 item 4: what schemathesis found where the document and the service disagreed, each
 * fixed and held here over real HTTP. Every value is judged twice, by the served document's own
 * schema (ajv) and by the service, and the two must agree: a value the document admits is
 * answered, a value it refuses is a 400 `bad_request` naming the parameter.
 */
describe('schemathesis findings: the document admits exactly what the service accepts', function () {
  this.timeout(120_000);
  let server: TestServer;
  let doc: Json;
  let key: string;
  const ajv = addFormats(new Ajv({ strict: false }));

  const call = async (method: string, path: string, json?: unknown) => {
    const headers: Record<string, string> = { 'X-API-Key': key };
    if (json !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${server.url}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const parameter = (path: string, name: string, method = 'get'): Json => {
    const p = (doc['paths'][path][method]['parameters'] as Json[]).find((x) => x['name'] === name);
    if (!p) throw new Error(`the document has no ${name} on ${method.toUpperCase()} ${path}`);
    return p;
  };
  const admits = (schema: Json, value: unknown) => ajv.validate(schema, value);

  /** The document's verdict on `value` for the parameter, and the service's on the request that sends it. */
  const agree = async (path: string, name: string, value: string, url: string) => {
    const documented = admits(parameter(path, name)['schema'] as Json, value);
    const r = await call('GET', url);
    const what = `${name}=${JSON.stringify(value)} on ${url}`;
    if (documented) {
      expect(r.status, `${what}: the document admits it (${JSON.stringify(r.body)})`).to.equal(200);
    } else {
      expect(r.status, `${what}: the document refuses it`).to.equal(400);
      expect(r.body, what).to.include({ code: 'bad_request' });
      expect(r.body['errors'], what).to.deep.include({ parameter: name, message: r.body['errors'][0].message });
    }
    return documented;
  };

  before(async () => {
    server = await startTestServer({ now: NOW });
    doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Json;
    ({ key } = await createAccountWithKey(server.services, { tier: 'enterprise' }));
    await server.services.runner.waitForHead();
  });
  after(() => server?.stop());

  it('refuses an empty date (start=, end=, since=) with 400 naming it, as its format: date says, on every operation that takes one', async () => {
    const dated: [string, string, string][] = [
      ['/v1/coverage', 'since', '/v1/coverage'],
      ['/v1/divergence/events', 'since', '/v1/divergence/events'],
      ['/v1/scores/social-heat/{ticker}', 'start', '/v1/scores/social-heat/AAPL'],
      ['/v1/scores/social-heat/{ticker}', 'end', '/v1/scores/social-heat/AAPL'],
      ['/v1/scores/{ticker}/history', 'start', '/v1/scores/AAPL/history'],
      ['/v1/scores/{ticker}/history', 'end', '/v1/scores/AAPL/history'],
      ['/v1/scores/history', 'start', '/v1/scores/history'],
      ['/v1/scores/history', 'end', '/v1/scores/history'],
    ];
    for (const [path, name, url] of dated) {
      expect(parameter(path, name)['schema'], `${name} on ${path}`).to.deep.equal({ type: 'string', format: 'date' });
      expect(await agree(path, name, '', `${url}?${name}=`), `${name}= on ${url}`).to.equal(false);
      expect(await agree(path, name, '2019-03-01', `${url}?${name}=2019-03-01`), `${name}=2019-03-01 on ${url}`).to.equal(true);
    }
  });

  it('refuses an empty integer (days=, limit=, min_score=…) with 400 naming it, as its type: integer says, on every operation of the document that takes one', async () => {
    const integers = Object.entries(doc['paths'] as Record<string, Json>).flatMap(([path, ops]) =>
      ((ops['get']?.['parameters'] ?? []) as Json[]).filter((p) => p['in'] === 'query' && p['schema']?.['type'] === 'integer').map((p) => [path, p['name'] as string] as const),
    );
    expect(integers.map(([path, name]) => `${name} on ${path}`)).to.include.members(['days on /v1/earnings', 'limit on /v1/screener', 'min_score on /v1/screener', 'limit on /v1/divergence', 'limit on /v1/signals', 'limit on /v1/usage/ledger']);
    for (const [path, name] of integers) {
      const url = path.replace('{ticker}', 'AAPL');
      expect(url, `${path}: a path parameter this test does not fill`).to.not.include('{');
      expect(await agree(path, name, '', `${url}?${name}=`), `${name}= on ${url}`).to.equal(false);
    }
  });

  it('refuses an empty since on /v1/scores/history and an empty ledger cursor with 400 naming them: neither schema admits ""', async () => {
    expect(await agree('/v1/scores/history', 'since', '', '/v1/scores/history?tickers=AAPL&since='), 'since=').to.equal(false);
    expect(await agree('/v1/usage/ledger', 'cursor', '', '/v1/usage/ledger?cursor='), 'cursor=').to.equal(false);
    expect(await agree('/v1/usage/ledger', 'cursor', '12', '/v1/usage/ledger?cursor=12'), 'cursor=12').to.equal(true);
  });

  it('refuses an empty as_known_at, and admits a restated_at timestamp only when it is a real date and time, in the document as in the service', async () => {
    const samples: [string, boolean][] = [
      ['', false],
      ['0000-00-00 00:00:00', false],
      ['2019-02-29 12:00:00', false],
      ['2019-04-31 12:00:00', false],
      ['2019-03-01 24:00:00', false],
      ['2019-03-01 12:60:00', false],
      ['2020-02-29 12:00:00', true],
      ['2000-02-29 00:00:00', true],
      ['2019-03-01 23:59:60', true],
      ['2019-03-01', true],
      ['2019-03-01T12:00:00Z', true],
    ];
    for (const [path, url] of [
      ['/v1/scores/{ticker}/history', '/v1/scores/AAPL/history?start=2019-03-01&as_known_at='],
      ['/v1/scores/history', '/v1/scores/history?tickers=AAPL&start=2019-03-01&as_known_at='],
    ] as const) {
      for (const [value, valid] of samples) {
        expect(await agree(path, 'as_known_at', value, url + encodeURIComponent(value)), `${JSON.stringify(value)} on ${path}`).to.equal(valid);
      }
    }
  });

  it('declares direction as the spec has it (bull, bear, or null for all, any case) and refuses direction= with 400', async () => {
    expect(parameter('/v1/divergence', 'direction')['schema']['enum']).to.deep.equal(['bull', 'bear', 'null']);
    const all = await call('GET', '/v1/divergence?limit=100');
    expect(all.status).to.equal(200);
    for (const spelling of ['null', 'NULL']) {
      const r = await call('GET', `/v1/divergence?limit=100&direction=${spelling}`);
      expect(r.status, spelling).to.equal(200);
      expect(r.body['rows'], `direction=${spelling} means all`).to.deep.equal(all.body['rows']);
    }
    const bear = await call('GET', '/v1/divergence?limit=100&direction=Bear');
    expect(bear.status).to.equal(200);
    expect(bear.body['rows'].length).to.be.above(0);
    expect(bear.body['rows'].every((row: Json) => row['gap'] < 0)).to.equal(true);
    for (const value of ['', 'sideways', 'nil']) {
      expect(await agree('/v1/divergence', 'direction', value, `/v1/divergence?direction=${value}`), `direction=${value}`).to.equal(false);
    }
  });

  it('states that an end before start is an empty window, and answers it so: 200, no rows (the document admits any two dates)', async () => {
    for (const [path, url] of [
      ['/v1/scores/{ticker}/history', '/v1/scores/AAPL/history'],
      ['/v1/scores/history', '/v1/scores/history?tickers=AAPL'],
      ['/v1/scores/social-heat/{ticker}', '/v1/scores/social-heat/AAPL'],
    ] as const) {
      expect(parameter(path, 'end')['description'], path).to.include('Before `start` the window is empty');
      const r = await call('GET', `${url}${url.includes('?') ? '&' : '?'}start=2019-03-02&end=2019-03-01`);
      expect(r.status, url).to.equal(200);
      expect(r.body, url).to.deep.include({ rows: [], count: 0 });
    }
  });


  it('declares a theme slug as the service reads it: letters, digits and "-", any case, at most 64, nothing around it', async () => {
    const samples: [string, boolean][] = [
      ['semiconductors', true],
      ['Semiconductors', true],
      [' semiconductors', false],
      ['semiconductors ', false],
      ['sémiconductors', false],
      ['-semiconductors', false],
      ['a'.repeat(65), false],
    ];
    for (const [slug, valid] of samples) {
      const documented = admits(parameter('/v1/themes/{slug}', 'slug')['schema'] as Json, slug);
      expect(documented, `the document on ${JSON.stringify(slug)}`).to.equal(valid);
      const r = await call('GET', `/v1/themes/${encodeURIComponent(slug)}`);
      if (valid) expect(r.status, slug).to.equal(200);
      else expect([r.status, r.body['code'], r.body['errors']?.[0]?.parameter], slug).to.deep.equal([400, 'bad_request', 'slug']);
    }
  });

  it('declares the webhook URL rule (https:// as written, at most 2,048 characters) in the document, from the rule the service applies', async () => {
    const schema = doc['components']['schemas']['RegisterWebhookRequest'] as Json;
    expect(schema['properties']['url']).to.include({ pattern: '^https://', maxLength: 2048, format: 'uri' });
    const samples: [string, boolean][] = [
      ['http://hooks.example.com/x', false],
      ['HTTPS://hooks.example.com/x', false],
      [' https://hooks.example.com/x', false],
      [`https://hooks.example.com/${'a'.repeat(2049 - 'https://hooks.example.com/'.length)}`, false],
      ['https://hooks.example.com/x', true],
    ];
    for (const [url, valid] of samples) {
      const body = { event_type: 'score_move', url };
      expect(ajv.validate(schema, body), `the document on ${url.slice(0, 40)}`).to.equal(valid);
      const r = await call('POST', '/v1/webhooks', body);
      expect(r.status, url.slice(0, 40)).to.equal(valid ? 201 : 400);
      if (!valid) expect(r.body, url.slice(0, 40)).to.include({ code: 'bad_request' });
    }
  });

  it('declares webhook_id up to 2^53 - 1, the largest id the service reads: above it is a 400 naming it, at it a 404', async () => {
    for (const path of ['/v1/webhooks/{webhook_id}', '/v1/webhooks/{webhook_id}/deliveries']) {
      const method = path.endsWith('deliveries') ? 'get' : 'delete';
      expect(parameter(path, 'webhook_id', method)['schema'], path).to.deep.equal({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    }
    const above = await call('GET', `/v1/webhooks/${Number.MAX_SAFE_INTEGER + 1}/deliveries`);
    expect([above.status, above.body['code'], above.body['errors']?.[0]?.parameter]).to.deep.equal([400, 'bad_request', 'webhook_id']);
    const at = await call('GET', `/v1/webhooks/${Number.MAX_SAFE_INTEGER}/deliveries`);
    expect([at.status, at.body['code']]).to.deep.equal([404, 'not_found']);
  });
});
