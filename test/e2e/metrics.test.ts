import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { pino } from 'pino';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { allProjections } from '../../projections/index.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { keyPrefixOf, metricsCallerAllowed } from '../../src/app/http/metrics.routes.js';
import { InstrumentedEventStore } from '../../src/app/metrics/instrumented-event-store.js';
import { Metrics } from '../../src/app/metrics/metrics.js';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { shownPrefix } from '../../src/domain/accounts/api-keys.js';
import { RATE_BURST_FACTOR } from '../../src/domain/plans.js';
import { parseAllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

/** One sample of a metric in Prometheus text (`name{a="x",b="y"} value`), or null when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return null;
}

/** A server over a logger that keeps every line. */
async function startLoggedServer(now: string) {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { ...(await startTestServer({ now, log })), lines };
}

describe('Metrics, readiness and the access log', function () {
  this.timeout(120_000);
  let server: Awaited<ReturnType<typeof startLoggedServer>>;
  before(async () => {
    server = await startLoggedServer('2019-03-15T12:00:00Z');
  });
  after(() => server.stop());

  const scrape = async () => {
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).to.equal(200);
    return { type: res.headers.get('content-type') ?? '', text: await res.text() };
  };
  const newKey = async (tier: 'free' | 'hobbyist') => {
    const k = await createAccountWithKey(server.services, { tier });
    await server.services.runner.waitForHead();
    return k;
  };

  describe('GET /metrics', () => {
    it('answers a loopback caller with Prometheus text naming every metric of the service and node\'s process metrics', async () => {
      await fetch(`${server.url}/healthz`);
      const { type, text } = await scrape();
      expect(type).to.match(/^text\/plain; version=0\.0\.4/);
      for (const name of [
        'scores_http_request_duration_seconds',
        'scores_credits_debited_total',
        'scores_http_too_many_requests_total',
        'scores_projection_lag_events',
        'scores_projection_lag_seconds',
        'scores_event_store_append_seconds',
        'scores_webhook_deliveries_total',
        'scores_export_runs_total',
        'process_cpu_seconds_total',
        'nodejs_eventloop_lag_seconds',
      ]) {
        expect(text, name).to.include(`# TYPE ${name} `);
      }
      expect(sample(text, 'scores_http_too_many_requests_total', { code: 'rate_limited' })).to.be.a('number');
      expect(sample(text, 'scores_http_too_many_requests_total', { code: 'credits_exhausted' })).to.be.a('number');
      // The seed and the demo accounts were appended: their appends were timed.
      expect(sample(text, 'scores_event_store_append_seconds_count', { operation: 'append_many', outcome: 'ok' })).to.be.greaterThan(0);
      for (const p of allProjections()) expect(sample(text, 'scores_projection_lag_events', { projection: p.name }), p.name).to.equal(0);
      expect(sample(text, 'scores_http_request_duration_seconds_count', { method: 'GET', route: '/healthz', status: '200' })).to.be.greaterThan(0);
    });

    it('adds a metered call\'s cost to the credits counter and times it under its route pattern, never its URL', async () => {
      const k = await newKey('hobbyist');
      const labels = { endpoint: 'scores', channel: 'rest' };
      const route = { method: 'GET', route: '/v1/scores/:ticker', status: '200' };
      const before = await scrape();
      const r = await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': k.key } });
      expect(r.status).to.equal(200);
      const after = await scrape();
      // /v1/scores/{ticker} costs 2 credits (src/domain/rate-card.ts).
      expect((sample(after.text, 'scores_credits_debited_total', labels) ?? 0) - (sample(before.text, 'scores_credits_debited_total', labels) ?? 0)).to.equal(2);
      const count = (t: string) => sample(t, 'scores_http_request_duration_seconds_count', route) ?? 0;
      expect(count(after.text) - count(before.text)).to.equal(1);
      expect(after.text).not.to.include('/v1/scores/AAPL');
    });

    it('counts each 429 under its code: credits_exhausted and rate_limited', async () => {
      const metric = 'scores_http_too_many_requests_total';
      const spent = await newKey('free');
      await setRateLimit(server.services, spent.account_id, 'unlimited');
      await server.services.runner.waitForHead();
      await server.services.ledger.debit(spent.account_id, { request_id: 'setup', endpoint: 'history', channel: 'rest', cost: 1000 });
      const before = await scrape();
      const exhausted = await fetch(`${server.url}/v1/scores/MSFT`, { headers: { 'X-API-Key': spent.key } });
      expect(exhausted.status).to.equal(429);
      expect(((await exhausted.json()) as { code: string }).code).to.equal('credits_exhausted');

      const slow = await newKey('hobbyist');
      await setRateLimit(server.services, slow.account_id, 1);
      await server.services.runner.waitForHead();
      const answers = await Promise.all(
        Array.from({ length: RATE_BURST_FACTOR + 10 }, async () => {
          const res = await fetch(`${server.url}/v1/scores/MSFT`, { headers: { 'X-API-Key': slow.key } });
          return { status: res.status, code: res.status === 429 ? ((await res.json()) as { code: string }).code : null };
        }),
      );
      const limited = answers.filter((a) => a.code === 'rate_limited').length;
      expect(limited).to.be.greaterThan(0);
      const after = await scrape();
      const delta = (code: string) => (sample(after.text, metric, { code }) ?? 0) - (sample(before.text, metric, { code }) ?? 0);
      expect(delta('credits_exhausted')).to.equal(1);
      expect(delta('rate_limited')).to.equal(limited);
    });
  });

  describe('Who may read /metrics', () => {
    it('allows loopback and the configured subnets by the socket address, and refuses everyone else', () => {
      const none = parseAllowSubnets('');
      const tenNet = parseAllowSubnets('10.0.0.0/8,fd00::/8');
      for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) expect(metricsCallerAllowed(a, none), a).to.equal(true);
      for (const a of ['10.1.2.3', '192.168.1.5', '8.8.8.8', '::ffff:10.1.2.3', 'fd00::1', '', 'localhost', undefined]) {
        expect(metricsCallerAllowed(a, none), String(a)).to.equal(false);
      }
      for (const a of ['10.1.2.3', '::ffff:10.1.2.3', 'fd00::1']) expect(metricsCallerAllowed(a, tenNet), a).to.equal(true);
      expect(metricsCallerAllowed('192.168.1.5', tenNet)).to.equal(false);
    });

    it('never lets a client header open it: a forwarded request passes only if every address it names passes too', () => {
      const none = parseAllowSubnets('');
      expect(metricsCallerAllowed('8.8.8.8', none, { 'x-forwarded-for': '127.0.0.1' })).to.equal(false);
      // A reverse proxy on loopback forwarding an outside caller, in X-Forwarded-For or X-Real-IP.
      expect(metricsCallerAllowed('127.0.0.1', none, { 'x-forwarded-for': '203.0.113.9' })).to.equal(false);
      expect(metricsCallerAllowed('127.0.0.1', none, { 'x-real-ip': '8.8.8.8' })).to.equal(false);
      expect(metricsCallerAllowed('127.0.0.1', none, { 'x-forwarded-for': '127.0.0.1, ::1', 'x-real-ip': '::1' })).to.equal(true);
      expect(metricsCallerAllowed('127.0.0.1', none, { forwarded: 'for=127.0.0.1' })).to.equal(false);
    });

    it('answers a loopback request that a proxy forwarded for an outside caller (X-Forwarded-For, X-Real-IP) with the 404 of an unknown path', async () => {
      for (const header of ['X-Forwarded-For', 'X-Real-IP']) {
        const res = await fetch(`${server.url}/metrics`, { headers: { [header]: '203.0.113.9' } });
        expect(res.status, header).to.equal(404);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(((await res.json()) as { code: string }).code).to.equal('not_found');
      }
    });

    it('refuses a caller on another interface with 404 not_found, and answers it once METRICS_ALLOW_SUBNETS names it', async function () {
      const ip = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
      if (!ip) this.skip();
      const dir = tempDir();
      const services: Services = await openServices(loadConfig(testEnv(dir, '2019-03-15T12:00:00Z', { HOST: ip, SCORES_DEMO: 'off' })));
      let running: RunningServer | null = null;
      try {
        running = await startServer(services, { progress: false, port: 0 });
        const url = `http://${ip}:${new URL(running.url).port}/metrics`;
        const refused = await fetch(url);
        expect(refused.status).to.equal(404);
        expect(((await refused.json()) as { code: string }).code).to.equal('not_found');
        services.config.metricsAllowSubnets = parseAllowSubnets(`${ip}/32`);
        const allowed = await fetch(url);
        expect(allowed.status).to.equal(200);
        expect(await allowed.text()).to.include('scores_credits_debited_total');
      } finally {
        if (running) await running.shutdown();
        else await services.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('refuses to start on a METRICS_ALLOW_SUBNETS entry that is not a CIDR subnet, naming the variable', () => {
      expect(() => loadConfig(testEnv('/tmp/unused', '2019-03-15T12:00:00Z', { METRICS_ALLOW_SUBNETS: '10.0.0.1' }))).to.throw(/METRICS_ALLOW_SUBNETS/);
      expect(() => loadConfig(testEnv('/tmp/unused', '2019-03-15T12:00:00Z', { READY_MAX_LAG_EVENTS: '-1' }))).to.throw(/READY_MAX_LAG_EVENTS/);
    });
  });

  describe('GET /readyz', () => {
    it('is 200 while the read models are caught up', async () => {
      const res = await fetch(`${server.url}/readyz`);
      expect(res.status).to.equal(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).to.include({ status: 'ready', lag_events: 0, max_lag_events: 10_000 });
      expect(body['lagging']).to.deep.equal([]);
    });

    it('is 503 while a projection lags the log by more than READY_MAX_LAG_EVENTS, and 200 again once it caught up', async () => {
      const { services } = server;
      services.config.readyMaxLagEvents = 0;
      await services.runner.stop();
      try {
        await services.events.append('metrics-probe', [{ type: 'MetricsProbed', data: {} }]);
        const res = await fetch(`${server.url}/readyz`);
        expect(res.status).to.equal(503);
        const body = (await res.json()) as { status: string; lag_events: number; lagging: string[] };
        expect(body.status).to.equal('lagging');
        expect(body.lag_events).to.equal(1);
        expect(body.lagging).to.have.members(allProjections().map((p) => p.name));
        const { text } = await scrape();
        expect(sample(text, 'scores_projection_lag_events', { projection: 'api-keys' })).to.equal(1);
        expect(sample(text, 'scores_projection_lag_seconds', { projection: 'api-keys' })).to.be.at.least(0);
        // /healthz stays liveness: the process answers.
        expect((await fetch(`${server.url}/healthz`)).status).to.equal(200);
      } finally {
        await services.runner.start();
        services.config.readyMaxLagEvents = 10_000;
      }
      services.config.readyMaxLagEvents = 0;
      try {
        expect((await fetch(`${server.url}/readyz`)).status).to.equal(200);
      } finally {
        services.config.readyMaxLagEvents = 10_000;
      }
    });

    it('is 503 when the log cannot be read; /metrics then leaves the lag out', async () => {
      const events = server.services.events;
      // An own property over the decorator's method; deleting it brings the method back.
      events.headPosition = () => Promise.reject(new Error('the store is down'));
      try {
        const res = await fetch(`${server.url}/readyz`);
        expect(res.status).to.equal(503);
        expect(((await res.json()) as { status: string }).status).to.equal('unavailable');
        const { text } = await scrape();
        expect(sample(text, 'scores_projection_lag_events', { projection: 'api-keys' })).to.equal(null);
      } finally {
        Reflect.deleteProperty(events, 'headPosition');
      }
    });
  });

  describe('The access log', () => {
    it('writes one line per request with its id, method, route pattern, status, duration and key prefix, never the key', async () => {
      const k = await newKey('hobbyist');
      const ok = await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': k.key } });
      const bad = await fetch(`${server.url}/v1/scores/AAPL/history?start=nope`, { headers: { 'X-API-Key': k.key } });
      const missing = await fetch(`${server.url}/no/such/path?x=1`);
      await new Promise((r) => setTimeout(r, 50));
      const requests = server.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request');
      const lineOf = (res: Response) => requests.filter((l) => l['req_id'] === res.headers.get('x-request-id'));

      const [line] = lineOf(ok);
      expect(lineOf(ok)).to.have.length(1);
      expect(line).to.include({ level: 30, method: 'GET', route: '/v1/scores/:ticker', status: 200, key_prefix: shownPrefix(k.key) });
      expect(line!['ms']).to.be.a('number').and.to.be.at.least(0);
      expect(lineOf(bad)[0]).to.include({ route: '/v1/scores/:ticker/history', status: 400, code: 'bad_request', key_prefix: shownPrefix(k.key) });
      expect(lineOf(missing)[0]).to.include({ route: '(none)', status: 404, code: 'not_found', key_prefix: null });
      const all = server.lines.join('\n');
      expect(all).not.to.include(k.key);
      expect(all).not.to.include('/no/such/path');
    });

    it('shows a short or foreign X-API-Key value as malformed, never whole', () => {
      expect(keyPrefixOf(undefined)).to.equal(null);
      expect(keyPrefixOf('sk_live_short')).to.equal('malformed');
      expect(keyPrefixOf('hunter2hunter2hunter2hunter2hunter2')).to.equal('malformed');
      expect(keyPrefixOf(`sk_live_${'a'.repeat(43)}`)).to.equal('sk_live_aaaaaa');
    });

    it('stays silent at LOG_LEVEL=silent (the tests\' level)', async () => {
      const quiet: TestServer = await startTestServer({ now: '2019-03-15T12:00:00Z', env: { SCORES_DEMO: 'off' } });
      try {
        expect(quiet.services.log.isLevelEnabled('info')).to.equal(false);
        expect((await fetch(`${quiet.url}/readyz`)).status).to.equal(200);
      } finally {
        await quiet.stop();
      }
    });
  });

  describe('The instrumented event store', () => {
    const inner = (fail?: Error): EventStore =>
      ({
        append: async () => {
          if (fail) throw fail;
          return { nextExpectedRevision: 0, position: '1' };
        },
        appendMany: async () => [],
      }) as unknown as EventStore;

    it('times appends by outcome and counts the webhook deliveries and export runs a process appends', async () => {
      const metrics = new Metrics();
      await new InstrumentedEventStore(inner(), metrics).append('webhook-1', [
        { type: 'WebhookDeliveryAttempted', data: { kind: 'live', ok: true } },
        { type: 'WebhookDeliveryAttempted', data: { kind: 'live', ok: false } },
        { type: 'WebhookDeliveryAttempted', data: { kind: 'test', ok: false } },
      ]);
      await new InstrumentedEventStore(inner(), metrics).append('exports', [
        { type: 'ExportStarted', data: {} },
        { type: 'ExportCompleted', data: {} },
      ]);
      const conflict = new InstrumentedEventStore(inner(new ConcurrencyError('s', 0, 1)), metrics);
      let thrown: unknown = null;
      await conflict.append('s', [{ type: 'ExportAbandoned', data: {} }], 0).catch((err: unknown) => (thrown = err));
      expect(thrown).to.be.instanceOf(ConcurrencyError);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'scores_webhook_deliveries_total', { kind: 'live', outcome: 'delivered' })).to.equal(1);
      expect(sample(text, 'scores_webhook_deliveries_total', { kind: 'live', outcome: 'failed' })).to.equal(1);
      expect(sample(text, 'scores_webhook_deliveries_total', { kind: 'test', outcome: 'failed' })).to.equal(1);
      expect(sample(text, 'scores_export_runs_total', { outcome: 'started' })).to.equal(1);
      expect(sample(text, 'scores_export_runs_total', { outcome: 'completed' })).to.equal(1);
      // A failed append recorded nothing.
      expect(sample(text, 'scores_export_runs_total', { outcome: 'abandoned' })).to.equal(0);
      expect(sample(text, 'scores_event_store_append_seconds_count', { operation: 'append', outcome: 'ok' })).to.equal(2);
      expect(sample(text, 'scores_event_store_append_seconds_count', { operation: 'append', outcome: 'conflict' })).to.equal(1);
    });
  });
});
