/**
 * What one client may hold of the HTTP server (src/app/http/client-limits.ts), over real sockets:
 * a body trickled too slowly is cut, headers that never end too, the connections per address and
 * the requests in flight per key are capped (a trusted proxy's connections are not), and a
 * connection refused for its rate is not read for a second. The limits are made small here; each
 * test connects from a loopback address of its own (127.0.0.x), so that no other test's
 * connections count against its address.
 */
import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { REFUSED_PAUSE_MS } from '../../src/app/http/client-limits.js';
import { startTestServer, type TestServer } from '../support/server.js';

const BODY_TIMEOUT_MS = 3_000;
const HEADERS_TIMEOUT_MS = 1_000;
const MAX_CONNECTIONS = 4;
const MAX_IN_FLIGHT = 2;
const PROXY = '127.0.0.3';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, any>;
}

/** A raw connection: everything it received, when it closed, and its answers as they come. */
class Raw {
  received = '';
  readonly opened = performance.now();
  readonly closed: Promise<number>;
  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (this.received += d));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve(performance.now() - this.opened)));
  }

  static open(port: number, localAddress: string): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress }, () => resolve(new Raw(socket)));
      socket.once('error', reject);
    });
  }

  send(text: string): this {
    this.socket.write(text);
    return this;
  }

  /** The `n`th answer on this connection (1 = the first), once it is whole; null when the connection closes first. */
  async answer(n = 1, timeoutMs = 20_000): Promise<Answer | null> {
    const end = performance.now() + timeoutMs;
    while (performance.now() < end) {
      const answers = parseAnswers(this.received);
      if (answers.length >= n) return answers[n - 1]!;
      if (this.socket.destroyed) return null;
      await sleep(20);
    }
    throw new Error(`no answer ${n} within ${timeoutMs} ms; received ${JSON.stringify(this.received.slice(0, 200))}`);
  }

  /** Milliseconds from opening to closing, or null when still open after `timeoutMs`. */
  closedWithin(timeoutMs: number): Promise<number | null> {
    return Promise.race([this.closed, sleep(timeoutMs).then(() => null)]);
  }

  /** Writes `total` bytes of body one at a time, every `everyMs`, while the connection is open. */
  trickle(total: number, everyMs: number): void {
    let sent = 0;
    const timer = setInterval(() => {
      if (this.socket.destroyed || sent++ >= total) return clearInterval(timer);
      this.socket.write(' ');
    }, everyMs);
    void this.closed.then(() => clearInterval(timer));
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The whole HTTP/1.1 answers (with Content-Length) at the start of `text`. */
function parseAnswers(text: string): Answer[] {
  const out: Answer[] = [];
  let rest = text;
  while (true) {
    const head = rest.indexOf('\r\n\r\n');
    if (head < 0) return out;
    const lines = rest.slice(0, head).split('\r\n');
    const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < head + 4 + length) return out;
    const body = rest.slice(head + 4, head + 4 + length);
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: body ? (JSON.parse(body) as Record<string, any>) : {} });
    rest = rest.slice(head + 4 + length);
  }
}

const get = (path: string, key?: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${key ? `X-API-Key: ${key}\r\n` : ''}\r\n`;
const postHead = (path: string, length: number, key?: string) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${key ? `X-API-Key: ${key}\r\n` : ''}\r\n`;

describe('Client limits: slow clients and floods', function () {
  this.timeout(60_000);
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startTestServer({
      now: '2019-04-10T12:00:00Z',
      env: {
        HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
        HTTP_REQUEST_TIMEOUT_MS: '30000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '30000',
        HTTP_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        HTTP_BODY_MIN_RATE: '1024',
        MAX_CONNECTIONS_PER_CLIENT: String(MAX_CONNECTIONS),
        MAX_REQUESTS_IN_FLIGHT_PER_CLIENT: String(MAX_IN_FLIGHT),
        TRUST_PROXY: PROXY,
      },
    });
    port = Number(new URL(server.url).port);
  });
  after(() => server.stop());

  /** One request on a connection of its own from `localAddress`: its answer (null when the connection was closed unanswered). */
  const ask = async (localAddress: string, request: string): Promise<Answer | null> => {
    const raw = await Raw.open(port, localAddress);
    try {
      return await raw.send(request).answer();
    } finally {
      raw.socket.destroy();
    }
  };

  const newKey = async (tier: 'free' | 'quant') => {
    const k = await createAccountWithKey(server.services, { tier });
    await server.services.runner.waitForHead();
    return k.key;
  };

  it('cuts a webhook body trickled at 1 byte per second: 408 request_timeout, then the connection closed, soon after the body timeout', async () => {
    const key = await newKey('quant');
    const raw = (await Raw.open(port, '127.0.0.21')).send(postHead('/v1/webhooks', 200, key)).send('{');
    raw.trickle(200, 1_000);
    const took = await raw.closedWithin(15_000);
    expect(took, 'the connection was still open after 15 s').to.not.equal(null);
    // Not before the body had its time; well before node's request timeout (30 s here).
    expect(took).to.be.within(BODY_TIMEOUT_MS - 100, 15_000);
    const answer = await raw.answer();
    expect(answer?.status).to.equal(408);
    expect(answer?.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(answer?.body).to.include({ code: 'request_timeout', status: 408 });
    expect(answer?.headers['connection']).to.equal('close');
  });

  it('closes a connection whose body still trickles after its answer (a 401 for a POST without a key)', async () => {
    const raw = (await Raw.open(port, '127.0.0.22')).send(postHead('/v1/webhooks', 200)).send('{');
    const answer = await raw.answer();
    expect(answer?.status).to.equal(401);
    raw.trickle(200, 1_000);
    const took = await raw.closedWithin(15_000);
    expect(took, 'the connection was still open after 15 s').to.not.equal(null);
    expect(took).to.be.within(BODY_TIMEOUT_MS - 100, 15_000);
  });

  it('answers headers that never end with 408 request_timeout and closes the connection, within the headers timeout and node’s check', async () => {
    const raw = (await Raw.open(port, '127.0.0.23')).send('GET /v1/usage HTTP/1.1\r\nHost: x\r\n');
    const took = await raw.closedWithin(10_000);
    expect(took, 'the connection was still open after 10 s').to.not.equal(null);
    expect(took).to.be.at.least(HEADERS_TIMEOUT_MS - 100);
    const answer = await raw.answer();
    expect(answer?.status).to.equal(408);
    expect(answer?.body).to.include({ code: 'request_timeout', status: 408 });
  });

  it(`closes a ${MAX_CONNECTIONS + 1}th connection from one address at once, serves another address meanwhile, and the address again once one of its connections closes`, async () => {
    const held: Raw[] = [];
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const raw = (await Raw.open(port, '127.0.0.24')).send(get('/healthz'));
      expect((await raw.answer())?.status).to.equal(200);
      held.push(raw);
    }
    const extra = (await Raw.open(port, '127.0.0.24')).send(get('/healthz'));
    expect(await extra.answer(), 'an answer on the connection over the cap').to.equal(null);
    expect(extra.received).to.equal('');

    expect((await ask('127.0.0.25', get('/healthz')))?.status).to.equal(200);

    held.pop()!.socket.destroy();
    // The server sees the close a moment later: the address is served again by then.
    let again: Answer | null = null;
    for (let i = 0; i < 50 && !again; i++) {
      if (i > 0) await sleep(100);
      again = await ask('127.0.0.24', get('/healthz'));
    }
    expect(again?.status).to.equal(200);
    for (const raw of held) raw.socket.destroy();
  });

  it('does not cap the connections of a proxy TRUST_PROXY names: they carry many clients', async () => {
    const conns = await Promise.all(Array.from({ length: MAX_CONNECTIONS + 2 }, () => Raw.open(port, PROXY)));
    const answers = await Promise.all(conns.map((c) => c.send(get('/healthz')).answer()));
    expect(answers.map((a) => a?.status)).to.deep.equal(conns.map(() => 200));
    for (const c of conns) c.socket.destroy();
  });

  it(`refuses a key's request beyond ${MAX_IN_FLIGHT} in flight with 429 rate_limited and Retry-After, serving another key meanwhile`, async () => {
    const [key, otherKey] = [await newKey('quant'), await newKey('quant')];
    // Two webhook registrations whose bodies have not arrived: in flight until they do (or are cut).
    const pending = await Promise.all([0, 1].map(async () => (await Raw.open(port, '127.0.0.26')).send(postHead('/v1/webhooks', 200, key)).send('{')));
    await sleep(100);
    const refused = await ask('127.0.0.27', get('/v1/usage', key));
    expect(refused?.status).to.equal(429);
    expect(refused?.body).to.include({ code: 'rate_limited', retry_after_seconds: 1 });
    expect(refused?.body['detail']).to.match(/in flight/);
    expect(refused?.headers['retry-after']).to.equal('1');
    expect(refused?.headers['cache-control']).to.equal('no-store');
    expect((await ask('127.0.0.27', get('/v1/usage', otherKey)))?.status).to.equal(200);

    pending[0]!.socket.destroy();
    let again: Answer | null = null;
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      if (i > 0) await sleep(100);
      again = await ask('127.0.0.27', get('/v1/usage', key));
    }
    expect(again?.status).to.equal(200);
    pending[1]!.socket.destroy();
  });

  it(`does not read a connection answered 429 rate_limited again for ${REFUSED_PAUSE_MS} ms: the next request on it waits`, async () => {
    const key = await newKey('free');
    const raw = await Raw.open(port, '127.0.0.28');
    // A free key's burst is 20: on one connection, one call after the other until one is refused.
    let n = 0;
    let status = 0;
    while (status !== 429 && n < 60) {
      raw.send(get('/v1/scores/AAPL', key));
      status = (await raw.answer(++n))!.status;
    }
    expect(status).to.equal(429);
    const sent = performance.now();
    raw.send(get('/v1/scores/AAPL', key));
    const next = await raw.answer(n + 1);
    expect(next).to.not.equal(null);
    expect(performance.now() - sent).to.be.at.least(REFUSED_PAUSE_MS - 200);
    raw.socket.destroy();
  });
});
