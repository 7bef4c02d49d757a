import { expect } from 'chai';
import { createServer as createHttpServer } from 'node:http';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import {
  DEFAULT_BASE_URL,
  NotFoundError,
  ScoresApiError,
  ScoresClient,
  ScoresConfigurationError,
  ScoresError,
  ScoresHttpError,
  ScoresNetworkError,
  verifyWebhook,
  WebhookVerificationError,
  type RetryEvent,
} from '../../clients/typescript/src/index.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

const NOW = '2019-03-01T23:00:00Z';

/** A port nothing listens on (taken, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A TCP server on `port` that forwards each connection to `target` (a server coming up late). */
function forwarder(port: number, target: number): Promise<Server> {
  const s = createServer((c: Socket) => {
    const up = connect(target, '127.0.0.1');
    c.pipe(up).pipe(c);
    up.on('error', () => c.destroy());
    c.on('error', () => up.destroy());
  });
  return new Promise((resolve) => s.listen(port, '127.0.0.1', () => resolve(s)));
}

function withEnv<T>(vars: Record<string, string | undefined>, body: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) (v === undefined ? delete process.env[k] : (process.env[k] = v));
  try {
    return body();
  } finally {
    for (const [k, v] of Object.entries(saved)) (v === undefined ? delete process.env[k] : (process.env[k] = v));
  }
}

describe('The TypeScript SDK: generated methods, dates, the environment, network errors, one error base, webhooks', function () {
  this.timeout(180_000);
  let server: TestServer;
  let quant = '';
  let port = 0;
  const client = (extra: Partial<ConstructorParameters<typeof ScoresClient>[0]> = {}) => new ScoresClient({ apiKey: quant, baseUrl: server.url, ...extra });

  before(async () => {
    server = await startTestServer({ now: NOW });
    quant = demoKey(server.dir, 'quant');
    port = Number(new URL(server.url).port);
  });
  after(() => server?.stop());

  it('a Date is sent as its UTC calendar date (an instant parameter as the whole instant): the same rows as the string', async () => {
    const c = client();
    const byString = await c.getScoreHistory('AAPL', { start: '2019-02-01', end: '2019-02-15' });
    const byDate = await c.getScoreHistory('AAPL', { start: new Date(Date.UTC(2019, 1, 1)), end: new Date(Date.UTC(2019, 1, 15, 23)) });
    expect(byString.rows.length).to.be.greaterThan(5);
    expect(byDate.rows).to.deep.equal(byString.rows);
    const asKnown = await c.getMultiTickerHistory({ tickers: ['AAPL'], start: '2019-02-01', as_known_at: new Date('2019-02-20T21:00:00Z') });
    expect(asKnown.rows.every((r) => r.date <= '2019-02-20')).to.equal(true);
    let sent = false;
    const guard = client({ fetch: (r) => ((sent = true), fetch(r)) });
    await guard.getScoreHistory('AAPL', { start: new Date('not a date') }).then(
      () => expect.fail('an invalid Date was sent'),
      (e: Error) => expect(e).to.be.instanceOf(RangeError).with.property('message', 'start: an invalid Date'),
    );
    expect(sent, 'nothing is sent for a bad date').to.equal(false);
  });

  it('every list operation answers through its typed method (themes, a theme, signals, earnings, divergences, coverage, ledger, track record, social heat)', async () => {
    const c = client();
    const themes = await c.listThemes();
    const theme = await c.getTheme(themes.themes[0]!.slug);
    expect(theme.constituents.length).to.be.greaterThan(0);
    expect((await c.getSignals({ limit: 3 })).signals.length).to.be.at.most(3);
    expect((await c.getDivergences({ direction: 'bull', limit: 5 })).rows.length).to.be.at.most(5);
    expect((await c.getCoverage({ since: new Date(Date.UTC(2019, 1, 1)) })).tickers).to.include('AAPL');
    expect((await c.getUsageLedger({ limit: 2 })).entries.length).to.be.at.most(2);
    expect((await c.getSocialHeat('AAPL', { start: new Date(Date.UTC(2019, 1, 1)) })).ticker).to.equal('AAPL');
    expect(await c.getTrackRecord()).to.have.property('trades');
    expect(await c.getUpcomingEarnings({ days: 30 })).to.have.property('reporters');
    expect(await c.getMeta()).to.have.property('dataset');
  });

  it('reads SCORES_API_KEY and SCORES_BASE_URL; without a key it says which variable to set; the default server is the local one', async () => {
    const fromEnv = withEnv({ SCORES_API_KEY: quant, SCORES_BASE_URL: `${server.url}/` }, () => new ScoresClient());
    expect(fromEnv.baseUrl).to.equal(server.url);
    expect((await fromEnv.getScore('AAPL')).ticker).to.equal('AAPL');
    expect(() => withEnv({ SCORES_API_KEY: undefined }, () => new ScoresClient({ baseUrl: server.url }))).to.throw(ScoresConfigurationError, 'no API key: pass apiKey or set SCORES_API_KEY');
    expect(() => withEnv({ SCORES_API_KEY: 'k', SCORES_BASE_URL: 'localhost:8080' }, () => new ScoresClient())).to.throw(ScoresConfigurationError, 'must be an http(s) URL');
    expect(withEnv({ SCORES_API_KEY: 'k', SCORES_BASE_URL: undefined }, () => new ScoresClient()).baseUrl).to.equal('http://localhost:8080');
    expect(DEFAULT_BASE_URL).to.equal('http://localhost:8080');
  });

  it('retries a GET refused by a server that is not up yet, with backoff, until it answers', async () => {
    const late = await closedPort();
    const events: RetryEvent[] = [];
    let proxy: Server | undefined;
    const c = client({ baseUrl: `http://127.0.0.1:${late}`, retry: { maxRetries: 6, baseDelayMs: 200 }, onRetry: (e) => events.push(e) });
    const timer = setTimeout(() => void forwarder(late, port).then((s) => (proxy = s)), 300);
    try {
      const score = await c.getScore('AAPL');
      expect(score.ticker).to.equal('AAPL');
    } finally {
      clearTimeout(timer);
      proxy?.close();
    }
    expect(events.length).to.be.greaterThan(0);
    expect(events.every((e) => e.status === null && e.error === 'TypeError: ECONNREFUSED')).to.equal(true);
    const delays = events.map((e) => e.delayMs);
    expect(delays[0]).to.be.within(100, 200);
  });

  it('throws ScoresNetworkError (a ScoresError) after the retries, does not retry a POST, and times out a server that never answers', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const events: RetryEvent[] = [];
    const c = client({ baseUrl: down, retry: { maxRetries: 2, baseDelayMs: 10 }, onRetry: (e) => events.push(e) });
    const err = await c.getScore('AAPL').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ScoresNetworkError).and.instanceOf(ScoresError);
    expect((err as ScoresNetworkError).message).to.equal(`GET ${down}/v1/scores/AAPL: TypeError: fetch failed: ECONNREFUSED`);
    expect(events).to.have.length(2);
    events.length = 0;
    expect(await c.createWebhook({ event_type: 'score_move', url: 'https://example.org/h' }).catch((e: unknown) => e)).to.be.instanceOf(ScoresNetworkError);
    expect(events, 'a POST is not retried').to.have.length(0);

    const silent = createServer(() => undefined).listen(0, '127.0.0.1');
    await new Promise((r) => silent.once('listening', r));
    try {
      const hung = client({ baseUrl: `http://127.0.0.1:${(silent.address() as { port: number }).port}`, timeoutMs: 300, retry: { maxRetries: 1, baseDelayMs: 10 }, onRetry: (e) => events.push(e) });
      const timedOut = await hung.getScore('AAPL').catch((e: unknown) => e);
      expect(timedOut).to.be.instanceOf(ScoresNetworkError);
      expect(String((timedOut as Error).message)).to.include('TimeoutError');
      expect(events.map((e) => e.error)).to.deep.equal(['TimeoutError: The operation was aborted due to timeout']);
    } finally {
      silent.close();
    }
  });

  it('has one base class for every error: an API problem, a non-problem answer, no answer, a bad configuration, a bad webhook', async () => {
    const notFound = await client().getScore('ZZZZZ').catch((e: unknown) => e);
    expect(notFound).to.be.instanceOf(NotFoundError).and.instanceOf(ScoresApiError).and.instanceOf(ScoresError);
    expect((notFound as ScoresError).name).to.equal('NotFoundError');
    // A proxy in front that answers with its own HTML page.
    const proxy = createHttpServer((_req, res) => res.writeHead(418, { 'content-type': 'text/html' }).end('<html>a teapot</html>')).listen(0, '127.0.0.1');
    await new Promise((r) => proxy.once('listening', r));
    try {
      const html = await client({ baseUrl: `http://127.0.0.1:${(proxy.address() as { port: number }).port}` }).getScore('AAPL').catch((e: unknown) => e);
      expect(html).to.be.instanceOf(ScoresHttpError).and.instanceOf(ScoresError);
      expect((html as ScoresHttpError).status).to.equal(418);
    } finally {
      proxy.close();
    }
    expect(new ScoresNetworkError('GET', 'u', new Error('x'))).to.be.instanceOf(ScoresError);
    expect(new WebhookVerificationError('x')).to.be.instanceOf(ScoresError);
    expect(new ScoresConfigurationError('x')).to.be.instanceOf(ScoresError);
  });

  it('verifyWebhook checks the standardwebhooks signature with header names in any case (Webhook-Id as well as webhook-id)', () => {
    const secret = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const body = JSON.stringify({ source: 'scores-service', events: [], sent_at: '2019-03-01T23:00:00Z', test: true });
    const at = new Date();
    const id = 'msg_1';
    const signature = new Webhook(secret).sign(id, at, body);
    const timestamp = String(Math.floor(at.getTime() / 1000));
    for (const headers of [
      { 'Webhook-Id': id, 'Webhook-Timestamp': timestamp, 'Webhook-Signature': signature },
      { 'WEBHOOK-ID': id, 'webhook-timestamp': timestamp, 'webhook-SIGNATURE': signature },
      new Headers({ 'Webhook-Id': id, 'Webhook-Timestamp': timestamp, 'Webhook-Signature': `v1,bm90LWl0 ${signature}` }),
    ])
      expect(verifyWebhook({ secret, body, headers }).source).to.equal('scores-service');
    const refused = (headers: Record<string, string>, b = body) => expect(() => verifyWebhook({ secret, body: b, headers })).to.throw(WebhookVerificationError);
    refused({ 'Webhook-Id': id, 'Webhook-Timestamp': timestamp, 'Webhook-Signature': signature }, body.replace('true', 'false'));
    refused({ 'Webhook-Id': 'msg_2', 'Webhook-Timestamp': timestamp, 'Webhook-Signature': signature });
    refused({ 'Webhook-Id': id, 'Webhook-Timestamp': String(Number(timestamp) - 600), 'Webhook-Signature': signature });
  });
});
