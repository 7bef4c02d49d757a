import { expect } from 'chai';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openFront } from '../../src/app/fleet/fleet.js';
import { startFront } from '../../src/app/fleet/front.js';
import type { Front } from '../../src/app/fleet/front.types.js';
import { findNginx } from '../../src/app/fleet/nginx-front.js';
import { until } from '../support/processes.js';

/** A stand-in API process: `/healthz` answers 200, anything else its name. */
class Backend {
  private server: Server | null = null;
  port = 0;
  /** TCP connections accepted so far. */
  connections = 0;
  constructor(readonly name: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens, on its former port when it has one (a restarted process behind the same address). */
  async start(): Promise<void> {
    this.server = createServer((req, res) => res.end(req.url === '/healthz' ? 'ok' : this.name));
    this.server.on('connection', () => this.connections++);
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Stops at once, open connections too: what the front sees of a killed process. */
  async kill(): Promise<void> {
    const server = this.server!;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * Both fronts `scores fleet up` may run (openFront): nginx (Debian's nginx-light; pending where it
 * is not installed) and the in-process one (front.ts), held to the same routing.
 */
for (const kind of ['nginx', 'node'] as const) {
  const nginx = kind === 'nginx' ? findNginx() : null;
  if (kind === 'nginx' && !nginx) {
    describe('The fleet front (nginx)', () => it('runs where nginx is installed (Debian: apt-get install nginx-light; .ci/run installs it)'));
    continue;
  }
  /** The front over `targets`; the in-process one checks health every `checkMs`, nginx notices a refused connection. */
  const frontOf = (targets: string[], checkMs = 100): Promise<Front> =>
    kind === 'node' ? startFront(targets, { port: 0, host: '127.0.0.1', checkMs }) : openFront(targets, { port: 0, host: '127.0.0.1' }, { FLEET_FRONT: 'nginx', PATH: process.env['PATH'] });

  describe(`The fleet front (${kind}) over three stand-in API processes`, function () {
    const backends = ['api-a', 'api-b', 'api-c'].map((name) => new Backend(name));
    const keys = Array.from({ length: 30 }, (_, i) => `sk_live_front_test_key_${i}`);
    let front: Front;

    /** Which process answered a call with `headers`, or the status when none did. */
    const call = async (headers: Record<string, string> = {}): Promise<string> => {
      const res = await fetch(`${front.url}/v1/scores/AAPL`, { headers });
      const text = await res.text();
      return res.ok ? text : String(res.status);
    };
    const callsWith = async (key: string, n: number): Promise<string[]> => {
      const answers = [];
      for (let i = 0; i < n; i++) answers.push(await call({ 'X-API-Key': key }));
      return answers;
    };

    before(async () => {
      for (const b of backends) await b.start();
      front = await frontOf(backends.map((b) => b.url));
    });

    after(async () => {
      await front?.close();
      for (const b of backends) if (b.port) await b.kill().catch(() => undefined);
    });

    it("sends one key's calls to one process, every time, and different keys to different processes", async () => {
      const homes = new Set<string>();
      for (const key of keys) {
        const answers = await callsWith(key, 8);
        expect(new Set(answers).size, key).to.equal(1);
        homes.add(answers[0]!);
      }
      // 30 keys miss one of three processes with a chance of 3 × (2/3)^30, about 1 in 60,000.
      expect([...homes].sort()).to.deep.equal(['api-a', 'api-b', 'api-c']);
      // The MCP endpoint takes the same header: the same key, the same process.
      const mcp = await fetch(`${front.url}/mcp/http`, { method: 'POST', headers: { 'X-API-Key': keys[0]! } });
      expect(await mcp.text()).to.equal((await callsWith(keys[0]!, 1))[0]);
    });

    it('keeps a signed-in session on one process, and spreads calls without a key or session round robin', async () => {
      const cookie = '__Host-scores.sid=session_0123456789abcdef';
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await call({ cookie }));
      expect(new Set(answers).size).to.equal(1);
      const anonymous = [await call(), await call(), await call()];
      expect(anonymous.sort()).to.deep.equal(['api-a', 'api-b', 'api-c']);
    });

    it("moves a key to another live process when its own is killed, and back when it returns; other keys stay put", async () => {
      const homes = new Map<string, string>();
      for (const key of keys) homes.set(key, (await callsWith(key, 1))[0]!);
      const key = keys[0]!;
      const home = backends.find((b) => b.name === homes.get(key))!;
      await home.kill();
      // The first call may be the one that finds the process gone (502) unless the health check did first.
      const first = await call({ 'X-API-Key': key });
      expect(first).to.not.equal(home.name);
      const fallback = (await callsWith(key, 1))[0]!;
      expect(first === '502' || first === fallback, `first answer ${first}`).to.equal(true);
      expect(fallback).to.be.oneOf(backends.map((b) => b.name).filter((n) => n !== home.name));
      expect(await callsWith(key, 8)).to.deep.equal(Array(8).fill(fallback));
      for (const [other, at] of homes) if (at !== home.name) expect((await callsWith(other, 1))[0], other).to.equal(at);

      await home.start();
      await until(async () => (await callsWith(key, 1))[0] === home.name, 5_000, 50);
      expect(await callsWith(key, 8)).to.deep.equal(Array(8).fill(home.name));
      for (const [other, at] of homes) expect((await callsWith(other, 1))[0], other).to.equal(at);
    });
  });

  describe(`The fleet front (${kind}) while API processes join (the fleet serves through the first at once)`, function () {
    const first = new Backend('api-first');
    const late = new Backend('api-late');
    let front: Front;

    before(async () => {
      await first.start();
      await late.start();
      front = await frontOf([first.url]);
    });

    after(async () => {
      await front.close();
      await first.kill();
      await late.kill();
    });

    it('serves every key through the first process, then spreads keys over both once the second joins', async () => {
      const keys = Array.from({ length: 20 }, (_, i) => `sk_live_join_${i}`);
      const answer = async (key: string) => (await fetch(`${front.url}/v1/usage`, { headers: { 'X-API-Key': key } })).text();
      for (const key of keys) expect(await answer(key)).to.equal('api-first');

      await front.add(late.url);
      const homes = await Promise.all(keys.map(answer));
      expect(new Set(homes)).to.deep.equal(new Set(['api-first', 'api-late']));
      // Each key stays with its process after the join.
      expect(await Promise.all(keys.map(answer))).to.deep.equal(homes);
    });
  });

  describe(`The fleet front (${kind}) keeps its connections to an API process alive`, function () {
    const backend = new Backend('api-only');
    let front: Front;

    before(async () => {
      await backend.start();
      front = await frontOf([backend.url.replace('127.0.0.1', 'localhost')], 60_000);
    });

    after(async () => {
      await front.close();
      await backend.kill();
    });

    it('forwards 40 calls, one after another, over one connection, and does not ask the client to close', async () => {
      const before = backend.connections;
      for (let i = 0; i < 40; i++) {
        const res = await fetch(`${front.url}/v1/usage`, { headers: { 'X-API-Key': 'sk_live_keepalive' } });
        expect(await res.text()).to.equal('api-only');
        expect(res.headers.get('connection')).to.not.equal('close');
      }
      expect(backend.connections - before).to.equal(1);
    });
  });
}
