import { expect } from 'chai';
import express, { type Express } from 'express';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createExpressServer } from '../../src/app/http/express-server.js';

/** An app that uses what the service's handlers use of a request and a response. */
function probeApp(): { app: Express; seen: { hasAppPrototype: boolean; linked: boolean }[] } {
  const app = express();
  app.disable('x-powered-by');
  const seen: { hasAppPrototype: boolean; linked: boolean }[] = [];
  app.use((req, res, next) => {
    res.setHeader('X-Probe', 'yes');
    res.locals['who'] = req.header('x-who') ?? 'nobody';
    next();
  });
  app.get('/items/:id', (req, res) => {
    seen.push({
      hasAppPrototype: Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response,
      linked: req.app === app && res.app === app && req.res === res && res.req === req,
    });
    res.status(201).json({ id: req.params['id'], q: req.query, who: res.locals['who'], path: req.path, ip: typeof req.ip, method: req.method });
  });
  app.post('/echo', express.json(), (req, res) => {
    res.json(req.body);
  });
  app.use((req, res) => {
    res.status(404).type('text/plain').send(`no ${req.method} ${req.path}`);
  });
  // Not express's default page: in development it prints the stack, whose frames name the
  // request's constructor (AppRequest here, IncomingMessage for app.listen()).
  app.use((err: Error & { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(err.status ?? 500).json({ error: err.message });
  });
  return { app, seen };
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function exchange(base: string, path: string, init: RequestInit = {}) {
  const r = await fetch(`${base}${path}`, init);
  const headers = Object.fromEntries([...r.headers].filter(([name]) => name !== 'date' && name !== 'keep-alive'));
  return { status: r.status, headers, body: await r.text() };
}

describe('The express server built with the app prototypes', () => {
  const plain = probeApp();
  const built = probeApp();
  let plainServer: Server;
  let builtServer: Server;
  let plainUrl: string;
  let builtUrl: string;
  before(async () => {
    plainServer = plain.app.listen(0, '127.0.0.1');
    await once(plainServer, 'listening');
    plainUrl = `http://127.0.0.1:${(plainServer.address() as AddressInfo).port}`;
    builtServer = createExpressServer(built.app);
    builtUrl = await listen(builtServer);
  });
  after(() => {
    plainServer.close();
    builtServer.close();
  });

  it('answers exactly as the server of app.listen() (status, headers, bytes)', async () => {
    const cases: [string, RequestInit][] = [
      ['/items/42?a=1&b=x', { headers: { 'X-Who': 'ada' } }],
      ['/items/%E2%9C%93', {}],
      ['/nowhere', {}],
      ['/echo', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"k":[1,2]}' }],
      ['/echo', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"k":' }],
      ['/items/1', { method: 'HEAD' }],
    ];
    for (const [path, init] of cases) {
      expect(await exchange(builtUrl, path, init), `${init.method ?? 'GET'} ${path}`).to.deep.equal(await exchange(plainUrl, path, init));
    }
  });

  it('gives each request and response the app prototypes from the start, which express then leaves alone', async () => {
    // What the objects are before express sees them: a listener ahead of the app's.
    const atBirth = (server: Server, app: Express) => {
      const births: boolean[] = [];
      server.prependListener('request', (req, res) => births.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response));
      return births;
    };
    const builtBirths = atBirth(builtServer, built.app);
    const plainBirths = atBirth(plainServer, plain.app);
    await exchange(builtUrl, '/items/7');
    await exchange(plainUrl, '/items/7');
    expect(builtBirths).to.deep.equal([true]);
    expect(built.seen.at(-1)).to.deep.equal({ hasAppPrototype: true, linked: true });
    // app.listen()'s objects get the same prototypes only once express changes them.
    expect(plainBirths).to.deep.equal([false]);
    expect(plain.seen.at(-1)).to.deep.equal({ hasAppPrototype: true, linked: true });
  });

  it("gives each app its own prototypes (two apps' servers do not share them)", async () => {
    const other = probeApp();
    const server = createExpressServer(other.app);
    const url = await listen(server);
    try {
      await exchange(url, '/items/8');
      expect(other.seen.at(-1)).to.deep.equal({ hasAppPrototype: true, linked: true });
    } finally {
      server.close();
    }
  });
});
