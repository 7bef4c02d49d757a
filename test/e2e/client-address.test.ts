import { expect } from 'chai';
import { request } from 'node:http';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { FormBrowser } from '../support/form-browser.js';
import { startTestServer, testEnv, type TestServer } from '../support/server.js';

const NOW = '2019-04-10T12:00:00Z';
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

let n = 0;
/** A new made-up address each call. */
const someone = () => `10.${(++n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/** `count` requests at once without a valid key, each with the X-Forwarded-For `forwardedFor(i)` gives: their statuses. */
async function keyless(server: TestServer, count: number, forwardedFor: (i: number) => string, mcp = false): Promise<number[]> {
  const one = async (i: number) => {
    const headers = { 'X-API-Key': 'sk_live_not-a-key', 'X-Forwarded-For': forwardedFor(i) };
    const res = mcp
      ? await fetch(`${server.url}/mcp/http`, { method: 'POST', headers: { ...headers, ...MCP_HEADERS }, body: TOOLS_LIST })
      : await fetch(`${server.url}/v1/scores/AAPL`, { headers });
    await res.arrayBuffer();
    return res.status;
  };
  return Promise.all(Array.from({ length: count }, (_, i) => one(i)));
}

/** Asks a sign-in link with the browser's X-Forwarded-For: the status. */
async function askLink(b: FormBrowser, email: string): Promise<number> {
  const form = await b.request('/account/sign-in');
  return (await b.submit(form.text, '/account/sign-in', { email })).status;
}

/** GET `url` over a socket bound to `localAddress` (another loopback address than 127.0.0.1): the status. */
function getFrom(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Who a request comes from, for every per-client limit and for /metrics (issue 28 item 6), over
 * real HTTP: the socket's address, unless TRUST_PROXY names the proxies whose X-Forwarded-For is
 * believed. The server listens on 127.0.0.1, so every test client's socket is loopback.
 */
describe('Client addresses: the socket\'s, unless TRUST_PROXY names the proxies', function () {
  this.timeout(120_000);
  const servers: TestServer[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const server = await startTestServer({ now: NOW, env: { SCORES_DEMO: 'off', ...env } });
    servers.push(server);
    return server;
  };
  after(() => Promise.all(servers.map((s) => s.stop())));

  describe('Without TRUST_PROXY', () => {
    let server: TestServer;
    before(async () => {
      server = await start();
    });

    it('limits requests without a valid key by the socket address: a rotating X-Forwarded-For still gets 429, on REST and MCP', async () => {
      for (const mcp of [false, true]) {
        const statuses = await keyless(server, 60, () => someone(), mcp);
        expect(statuses, mcp ? 'MCP' : 'REST').to.include(429);
        expect(statuses.every((s) => s === 401 || s === 429)).to.equal(true);
      }
    });

    it('limits sign-in requests by the socket address: the 11th in an hour is 429 whatever X-Forwarded-For says', async () => {
      const statuses = [];
      for (let i = 0; i < 11; i++) statuses.push(await askLink(new FormBrowser(() => server.url, someone()), `rotating${i}@example.com`));
      expect(statuses).to.deep.equal([...Array<number>(10).fill(200), 429]);
    });

    it('counts another socket address as another client (127.0.0.2, where the host routes it)', async function () {
      // 127.0.0.1 is over its key-less budget now; a burst from 127.0.0.2 is not.
      expect(await keyless(server, 30, () => someone())).to.include(429);
      let status: number;
      try {
        status = await getFrom(`${server.url}/v1/scores/AAPL`, '127.0.0.2', { 'X-API-Key': 'sk_live_not-a-key' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') this.skip();
        throw err;
      }
      expect(status).to.equal(401);
    });

    it('refuses /metrics (404) to a loopback request that names an outside client in any client header, and answers it otherwise', async () => {
      expect((await fetch(`${server.url}/metrics`)).status).to.equal(200);
      for (const header of ['X-Real-IP', 'X-Forwarded-For', 'True-Client-IP', 'CF-Connecting-IP']) {
        const res = await fetch(`${server.url}/metrics`, { headers: { [header]: '8.8.8.8' } });
        expect(res.status, header).to.equal(404);
        expect(((await res.json()) as { code: string }).code).to.equal('not_found');
      }
      expect((await fetch(`${server.url}/metrics`, { headers: { 'X-Real-IP': '127.0.0.1' } })).status).to.equal(200);
    });
  });

  describe('With TRUST_PROXY=loopback (a proxy on the same host)', () => {
    let server: TestServer;
    before(async () => {
      server = await start({ TRUST_PROXY: 'loopback' });
    });

    it('counts each client X-Forwarded-For names: many clients are each within the limit, one client is limited', async () => {
      const many = await keyless(server, 60, () => someone());
      expect([...new Set(many)]).to.deep.equal([401]);
      expect(await keyless(server, 60, () => '10.200.0.1')).to.include(429);
      expect(await keyless(server, 60, () => someone(), true)).to.not.include(429);
    });

    it('answers /metrics when the proxy forwards a loopback client, and refuses it (404) for an outside one', async () => {
      expect((await fetch(`${server.url}/metrics`, { headers: { 'X-Forwarded-For': '127.0.0.1' } })).status).to.equal(200);
      expect((await fetch(`${server.url}/metrics`, { headers: { 'X-Forwarded-For': '8.8.8.8' } })).status).to.equal(404);
    });
  });

  describe('With TRUST_PROXY as a hop count or as the proxies\' networks', () => {
    it('with 1, believes the last X-Forwarded-For entry only (the one the proxy added)', async () => {
      const server = await start({ TRUST_PROXY: '1' });
      expect(await keyless(server, 60, () => `${someone()}, 10.201.0.1`), 'the client a forger names first is ignored').to.include(429);
      expect(await keyless(server, 60, () => `10.201.0.2, ${someone()}`)).to.not.include(429);
    });

    it('with 10.0.0.0/8, does not believe a loopback peer: it is not one of the proxies', async () => {
      const server = await start({ TRUST_PROXY: '10.0.0.0/8' });
      expect(await keyless(server, 60, () => someone())).to.include(429);
    });
  });

  describe('TRUST_PROXY values', () => {
    const config = (value: string) => loadConfig(testEnv('/tmp/unused', NOW, { TRUST_PROXY: value }));

    it('reads unset as none, a whole number as hops, and a list of addresses, CIDRs and range names as the proxies', () => {
      expect(loadConfig(testEnv('/tmp/unused', NOW)).trustProxy).to.equal(false);
      expect(config('').trustProxy).to.equal(false);
      expect(config('2').trustProxy).to.equal(2);
      expect(config(' loopback, 10.0.0.0/8 ,::1').trustProxy).to.deep.equal(['loopback', '10.0.0.0/8', '::1']);
    });

    it('refuses at start what express would not take, naming the variable (true too: trusting every peer is what it exists to avoid)', () => {
      for (const value of ['true', '10.0.0.0/33', 'proxy.example.com', '-1']) {
        expect(() => config(value), value).to.throw(ConfigError, /TRUST_PROXY: must be a hop count/);
      }
    });
  });
});
