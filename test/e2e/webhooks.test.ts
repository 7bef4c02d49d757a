import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';
import { receiverCertificate } from '../support/receiver-certificate.js';

interface Received {
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

interface Answer {
  status: number;
  type: string;
  credits: string | null;
  allow: string | null;
  body: Record<string, any>;
}

/**
 * The HTTP face of webhooks (docs/webhooks.md, "Endpoints") over real HTTP, with a real HTTPS
 * receiver on loopback: a self-signed certificate trusted through WEBHOOK_CA_FILE, and loopback
 * let through the address rules with WEBHOOK_ALLOW_SUBNETS.
 */
describe('Webhooks over HTTP', function () {
  this.timeout(120_000);
  let server: TestServer;
  let receiver: Server;
  let receiverUrl: string;
  let dir: string;
  const received: Received[] = [];
  let quant = '';
  let other = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scores-webhooks-e2e-'));
    const pems = await receiverCertificate(dir);
    receiver = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/scores`;
    server = await startTestServer({ now: '2019-06-14T12:00:00Z', env: { WEBHOOK_CA_FILE: pems.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
    quant = demoKey(server.dir, 'quant');
    other = demoKey(server.dir, 'enterprise');
  });

  after(async () => {
    await server?.stop();
    receiver?.closeAllConnections();
    receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function call(method: string, path: string, options: { key?: string; json?: unknown; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers: Record<string, string> = { 'X-API-Key': options.key ?? quant, ...options.headers };
    let body: string | undefined = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(`${server.url}${path}`, { method, headers, body });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      credits: res.headers.get('x-credits-remaining'),
      allow: res.headers.get('allow'),
      body: text ? (JSON.parse(text) as Record<string, any>) : {},
    };
  }

  /** Every answer to an authenticated caller carries its balance, success or refusal. */
  function expectCredits(r: Answer, what: string): void {
    expect(r.credits, `${what}: X-Credits-Remaining`).to.be.a('string').and.not.be.empty;
  }

  function expectProblem(r: Answer, status: number, code: string, what = code): Record<string, any> {
    expect(r.status, `${what}: ${JSON.stringify(r.body)}`).to.equal(status);
    expect(r.type).to.match(/^application\/problem\+json/);
    expect(r.body['code']).to.equal(code);
    expectCredits(r, what);
    return r.body;
  }

  /** The read models follow the log a moment later: poll briefly until `ready` holds. */
  async function eventually(path: string, ready: (r: Answer) => boolean, key = quant): Promise<Answer> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const r = await call('GET', path, { key });
      if (ready(r) || Date.now() > deadline) return r;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  let id: number;
  let secret: string;

  it('registers a webhook: 201 with its secret, shown once', async () => {
    const r = await call('POST', '/v1/webhooks', { json: { event_type: 'score_move', url: receiverUrl } });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    expectCredits(r, 'register');
    expect(r.body).to.have.keys('id', 'event_type', 'url', 'secret', 'signing');
    expect(r.body['id']).to.be.a('number');
    expect(r.body['event_type']).to.equal('score_move');
    expect(r.body['url']).to.equal(receiverUrl);
    expect(r.body['secret']).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(r.body['signing']).to.match(/X-Service-Signature/);
    id = r.body['id'] as number;
    secret = r.body['secret'] as string;
  });

  it('lists the account\'s webhooks without the secret', async () => {
    const r = await eventually('/v1/webhooks', (a) => (a.body['webhooks'] as unknown[] | undefined)?.length === 1);
    expect(r.status).to.equal(200);
    expectCredits(r, 'list');
    expect(r.body).to.deep.equal({
      webhooks: [{ id, event_type: 'score_move', url: receiverUrl, is_active: true, consecutive_failures: 0, last_fired_at: null }],
    });
    expect(JSON.stringify(r.body)).not.to.include('whsec_');
    // Another account sees none of it.
    const theirs = await call('GET', '/v1/webhooks', { key: other });
    expect(theirs.body).to.deep.equal({ webhooks: [] });
  });

  it('sends a signed test delivery to the receiver, verifiable with Standard Webhooks and by hand', async () => {
    received.length = 0;
    const r = await call('POST', `/v1/webhooks/${id}/test`, { json: {} });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expectCredits(r, 'test');
    expect(r.body).to.include({ ok: true, status_code: 204, error: null, delivered_to: receiverUrl, signature_header: 'X-Service-Signature' });
    expect(r.body['payload']).to.include({ test: true, source: 'scores-service' });
    expect(r.body['payload'].events[0]).to.include({ type: 'score_move', test: true });

    expect(received).to.have.length(1);
    const got = received[0]!;
    expect(got.url).to.equal('/hooks/scores');
    expect(JSON.parse(got.body)).to.deep.equal(r.body['payload']);
    // By hand: hex HMAC-SHA256 of the raw body keyed with the secret string as shown.
    expect(got.headers['x-service-signature']).to.equal(createHmac('sha256', secret).update(got.body).digest('hex'));
    // Standard Webhooks: the library checks the timestamp against this machine's clock. The
    // service's data clock is pinned to 2019-06-14; the timestamp is the real sending instant.
    const stamp = Number(got.headers['webhook-timestamp']);
    expect(Date.now() / 1000 - stamp).to.be.within(0, 60);
    const verified = new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
    expect(verified).to.deep.equal(r.body['payload']);
    expect(() => new Webhook(secret).verify(`${got.body} `, got.headers as Record<string, string>)).to.throw();

    // No body at all is as good as an empty object.
    const bare = await call('POST', `/v1/webhooks/${id}/test`);
    expect(bare.status, JSON.stringify(bare.body)).to.equal(200);
    expect(received).to.have.length(2);
  });

  it('lists the attempts in /deliveries, newest first', async () => {
    const r = await eventually(`/v1/webhooks/${id}/deliveries`, (a) => a.body['count'] === 2);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expectCredits(r, 'deliveries');
    expect(r.body['count']).to.equal(2);
    // An attempt's time is when it was made (transport time), not the pinned data clock.
    const recently = (stamp: unknown) => Date.now() - Date.parse(`${String(stamp).replace(' ', 'T')}Z`);
    for (const d of r.body['deliveries'] as Record<string, unknown>[]) {
      expect(d).to.deep.include({ kind: 'test', event_type: 'score_move', event_count: 1, ok: true, status_code: 204, error: null });
      expect(d['created_at']).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(recently(d['created_at'])).to.be.within(0, 120_000);
    }
    const list = await eventually('/v1/webhooks', (a) => a.body['webhooks']?.[0]?.last_fired_at !== null);
    expect(list.body['webhooks'][0]).to.include({ consecutive_failures: 0, is_active: true });
    expect(recently(list.body['webhooks'][0].last_fired_at)).to.be.within(0, 120_000);
  });

  it('enables a webhook: an active one stays as it is', async () => {
    const r = await call('POST', `/v1/webhooks/${id}/enable`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expectCredits(r, 'enable');
    expect(r.body).to.deep.equal({ ok: true, id, is_active: true });
  });

  it('enables a deactivated webhook again', async () => {
    // Deactivation comes from live deliveries (a 410, or 5 days of failures): written here as the dispatcher would.
    await server.services.events.append(webhookStream(id), [{ type: 'WebhookDeactivated', data: { webhook_id: id, reason: 'gone', at: '2019-06-14T12:00:00.000Z' } }]);
    const off = await eventually('/v1/webhooks', (a) => a.body['webhooks']?.[0]?.is_active === false);
    expect(off.body['webhooks'][0]).to.include({ id, is_active: false });
    const r = await call('POST', `/v1/webhooks/${id}/enable`, { json: {} });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.deep.equal({ ok: true, id, is_active: true });
    const on = await eventually('/v1/webhooks', (a) => a.body['webhooks']?.[0]?.is_active === true);
    expect(on.body['webhooks'][0]).to.include({ id, is_active: true, consecutive_failures: 0 });
  });

  it('answers 404 for another account\'s webhook, and for an unknown id', async () => {
    expectProblem(await call('POST', `/v1/webhooks/${id}/test`, { key: other }), 404, 'not_found', 'their test');
    expectProblem(await call('DELETE', `/v1/webhooks/${id}`, { key: other }), 404, 'not_found', 'their delete');
    expectProblem(await call('GET', `/v1/webhooks/${id}/deliveries`, { key: other }), 404, 'not_found', 'their deliveries');
    expectProblem(await call('POST', `/v1/webhooks/${id}/enable`, { key: other }), 404, 'not_found', 'their enable');
    expectProblem(await call('DELETE', '/v1/webhooks/999999'), 404, 'not_found', 'unknown');
  });

  it('refuses a webhook_id that is not an integer with a 400 naming it', async () => {
    for (const [method, path, message] of [
      ['DELETE', '/v1/webhooks/abc', 'must be an integer (got "abc")'],
      ['POST', '/v1/webhooks/1.5/test', 'must be an integer (got "1.5")'],
      ['GET', '/v1/webhooks/-1/deliveries', 'must be at least 1'],
      ['POST', '/v1/webhooks/x/enable', 'must be an integer (got "x")'],
    ] as const) {
      const body = expectProblem(await call(method, path), 400, 'bad_request', `${method} ${path}`);
      expect(body['errors']).to.deep.equal([{ parameter: 'webhook_id', message }]);
    }
  });

  it('refuses malformed bodies with 400 and the reason', async () => {
    const cases: [string, { json?: unknown; body?: string; headers?: Record<string, string> }, RegExp][] = [
      ['not JSON', { body: '{"event_type":', headers: { 'Content-Type': 'application/json' } }, /malformed request/],
      ['wrong type', { json: { event_type: 'score_move', url: 42 } }, /url/],
      ['missing field', { json: { event_type: 'score_move' } }, /url/],
      ['unknown field', { json: { event_type: 'score_move', url: receiverUrl, secret: 'x' } }, /secret/],
      ['unknown event_type', { json: { event_type: 'price_move', url: receiverUrl } }, /event_type/],
      ['http url', { json: { event_type: 'score_move', url: 'http://hooks.example.com/x' } }, /https/],
      ['forbidden address', { json: { event_type: 'score_move', url: 'https://10.0.0.5/x' } }, /10\.0\.0\.5|private/],
      ['an array', { json: [{ event_type: 'score_move', url: receiverUrl }] }, /body/],
    ];
    for (const [what, init, reason] of cases) {
      const body = expectProblem(await call('POST', '/v1/webhooks', init), 400, 'bad_request', what);
      expect(body['detail'], what).to.match(reason);
    }
    const extra = expectProblem(await call('POST', `/v1/webhooks/${id}/test`, { json: { anything: 1 } }), 400, 'bad_request', 'test with a field');
    expect(extra['detail']).to.match(/anything/);
  });

  it('refuses a body over 16 KiB with 413 and a body of another type with 415', async () => {
    const big = JSON.stringify({ event_type: 'score_move', url: `https://hooks.example.com/${'a'.repeat(17 * 1024)}` });
    expectProblem(await call('POST', '/v1/webhooks', { body: big, headers: { 'Content-Type': 'application/json' } }), 413, 'payload_too_large');
    expectProblem(await call('POST', '/v1/webhooks', { body: 'event_type=score_move', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
    expectProblem(await call('POST', `/v1/webhooks/${id}/test`, { body: 'hello' }), 415, 'unsupported_media_type', 'text/plain test');
  });

  it('keeps webhooks to quant and higher, checking the key before the body', async () => {
    const r = await call('POST', '/v1/webhooks', { key: demoKey(server.dir, 'hobbyist'), json: { event_type: 'score_move', url: receiverUrl } });
    expectProblem(r, 403, 'tier');
    expectProblem(await call('GET', '/v1/webhooks', { key: demoKey(server.dir, 'builder') }), 403, 'tier', 'builder list');
    const anonymous = await fetch(`${server.url}/v1/webhooks`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{not json' });
    expect(anonymous.status).to.equal(401);
  });

  it('refuses an unknown query parameter', async () => {
    expectProblem(await call('GET', '/v1/webhooks?limit=5'), 400, 'bad_request');
    expectProblem(await call('POST', '/v1/webhooks?x=1', { json: { event_type: 'score_move', url: receiverUrl } }), 400, 'bad_request', 'POST ?x');
  });

  it('answers a method a path does not serve with 405 and the methods it does', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/v1/webhooks', 'GET, POST'],
      ['DELETE', '/v1/webhooks', 'GET, POST'],
      ['HEAD', '/v1/webhooks', 'GET, POST'],
      ['GET', `/v1/webhooks/${id}`, 'DELETE'],
      ['PUT', `/v1/webhooks/${id}`, 'DELETE'],
      ['GET', `/v1/webhooks/${id}/test`, 'POST'],
      ['POST', `/v1/webhooks/${id}/deliveries`, 'GET'],
      ['POST', '/v1/screener', 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await fetch(`${server.url}${path}`, { method, headers: { 'X-API-Key': quant } });
      expect(res.status, `${method} ${path}`).to.equal(405);
      expect(res.headers.get('allow'), `${method} ${path}`).to.equal(allow);
      if (method !== 'HEAD') expect(await res.json()).to.include({ code: 'method_not_allowed', status: 405 });
    }
  });

  it('refuses an account\'s 11th webhook with 422 limit_exceeded', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await call('POST', '/v1/webhooks', { key: other, json: { event_type: i % 2 ? 'score_move' : 'divergence_event', url: `${receiverUrl}?n=${i}` } });
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
    }
    const body = expectProblem(await call('POST', '/v1/webhooks', { key: other, json: { event_type: 'score_move', url: receiverUrl } }), 422, 'limit_exceeded');
    expect(body['maximum']).to.equal(10);
  });

  it('deletes a webhook: { ok: true }, then 404 and no longer listed', async () => {
    const r = await call('DELETE', `/v1/webhooks/${id}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expectCredits(r, 'delete');
    expect(r.body).to.deep.equal({ ok: true });
    expectProblem(await call('DELETE', `/v1/webhooks/${id}`), 404, 'not_found', 'deleted again');
    expectProblem(await call('POST', `/v1/webhooks/${id}/test`), 404, 'not_found', 'test deleted');
    const list = await eventually('/v1/webhooks', (a) => (a.body['webhooks'] as unknown[]).length === 0);
    expect(list.body).to.deep.equal({ webhooks: [] });
    const deliveries = await eventually(`/v1/webhooks/${id}/deliveries`, (a) => a.status === 404);
    expectProblem(deliveries, 404, 'not_found', 'deliveries of a deleted webhook');
  });
});
