import { expect } from 'chai';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { oneLayer } from '../../src/app/http/one-layer.js';

/** Each middleware notes its name in a header, then does what the request's `?do=` asks of it. */
const step =
  (name: string): RequestHandler =>
  (req, res, next) => {
    res.append('X-Steps', name);
    if (req.query['at'] !== name) return next();
    switch (req.query['do'] as string) {
      case 'answer':
        res.status(202).send(`answered by ${name}`);
        return;
      case 'error':
        return next(new Error(`${name} failed`));
      case 'throw':
        throw new Error(`${name} threw`);
      case 'reject':
        return Promise.reject(new Error(`${name} rejected`));
      case 'route':
        return next('route');
      case 'reject-empty':
        return Promise.reject(undefined); // eslint-disable-line @typescript-eslint/prefer-promise-reject-errors
      case 'router':
        return next('router');
      default:
        return next();
    }
  };

const onError: ErrorRequestHandler = (err: Error, _req, res, _next) => {
  res.status(500).send(`error: ${err.message}`);
};

/** The same middlewares as separate layers of express's router, or as one layer. */
function app(joined: boolean): express.Express {
  const a = express();
  const steps = ['one', 'two', 'three'].map(step);
  if (joined) a.use(oneLayer(...steps));
  else for (const s of steps) a.use(s);
  a.get('/x', (_req, res) => {
    res.send('route');
  });
  a.use(onError);
  return a;
}

describe('Middlewares run as one router layer', () => {
  const servers: Server[] = [];
  let urls: [string, string];
  before(async () => {
    urls = (await Promise.all(
      [false, true].map(
        (joined) =>
          new Promise<string>((resolve) => {
            const s = app(joined).listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`));
            servers.push(s);
          }),
      ),
    )) as [string, string];
  });
  after(() => servers.forEach((s) => s.close()));

  const cases = ['', '?at=two&do=answer', '?at=one&do=error', '?at=two&do=throw', '?at=three&do=reject', '?at=two&do=reject-empty', '?at=one&do=route', '?at=two&do=router', '?at=three&do=answer'];
  for (const query of cases) {
    it(`answers /x${query} as the separate layers do`, async () => {
      const [separate, joined] = await Promise.all(
        urls.map(async (base) => {
          const r = await fetch(`${base}/x${query}`);
          return { status: r.status, steps: r.headers.get('x-steps'), body: await r.text() };
        }),
      );
      expect(joined).to.deep.equal(separate);
    });
  }

  it('runs them in order, each once, and then the route', async () => {
    const r = await fetch(`${urls[1]}/x`);
    expect(r.headers.get('x-steps')).to.equal('one, two, three');
    expect(await r.text()).to.equal('route');
  });
});
