import { expect } from 'chai';
import express, { type Express } from 'express';
import type { Server } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useLeanJson } from '../../src/app/http/json-response.js';

/** What the client sees of a response: status, headers (but the per-connection ones), raw body. */
interface Seen {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(server: Server, method: string, path: string): Promise<Seen> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = res.headers;
        resolve({ status: res.statusCode!, headers, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The routes each app serves: one per kind of value and status `res.json` is given. */
const CASES: Record<string, (res: express.Response) => void> = {
  object: (res) => res.json({ ticker: 'AAPL', score: 52.4, gap: null, estimated: false, note: 'Zürich – 東京 “quoted” \u2028 \ud83d\udcc8' }),
  array: (res) => res.json([1, 'two', { three: [3] }]),
  string: (res) => res.json('a "string"'),
  number: (res) => res.json(42.5),
  null: (res) => res.json(null),
  boolean: (res) => res.json(false),
  undefined: (res) => res.json(undefined),
  function: (res) => res.json(() => 1),
  created: (res) => res.status(201).json({ id: 'key_1' }),
  problem: (res) => res.status(404).json({ code: 'not_found' }),
  'no-content': (res) => res.status(204).json({ dropped: true }),
  'preset-type': (res) => res.type('application/problem+json').status(422).json({ code: 'limit_exceeded' }),
  'preset-charset': (res) => res.setHeader('Content-Type', 'application/json; charset=latin1').json({ a: 1 }),
  'extra-headers': (res) => res.setHeader('X-Credits-Remaining', '4998').json({ ok: true }),
};

function appWith(lean: boolean, settings: Record<string, unknown> = {}): Express {
  const app = express();
  app.set('etag', false);
  for (const [k, v] of Object.entries(settings)) app.set(k, v);
  if (lean) useLeanJson(app);
  for (const [name, send] of Object.entries(CASES)) app.all(`/${name}`, (_req, res) => send(res));
  return app;
}

async function listen(app: Express): Promise<Server> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return server;
}

describe('lean res.json', () => {
  let lean: Server;
  let stock: Server;
  before(async () => {
    lean = await listen(appWith(true));
    stock = await listen(appWith(false));
  });
  after(() => {
    lean.close();
    stock.close();
  });

  for (const method of ['GET', 'HEAD']) {
    for (const name of Object.keys(CASES)) {
      it(`${method} ${name}: same status, headers and bytes as express's res.json`, async () => {
        const [a, b] = await Promise.all([get(lean, method, `/${name}`), get(stock, method, `/${name}`)]);
        expect(a).to.deep.equal(b);
      });
    }
  }

  it('counts Content-Length in bytes, not characters', async () => {
    const r = await get(lean, 'GET', '/object');
    expect(Number(r.headers['content-length'])).to.equal(Buffer.byteLength(r.body)).and.to.be.greaterThan(r.body.length);
    expect(r.headers['content-type']).to.equal('application/json; charset=utf-8');
  });

  it('is installed only where express would do nothing more (no json spaces, replacer, escape, ETag)', () => {
    expect(appWith(true).response.json).to.not.equal(express.response.json);
    for (const settings of [{ 'json spaces': 2 }, { 'json escape': true }, { 'json replacer': (_k: string, v: unknown) => v }, { etag: 'weak' }]) {
      expect(appWith(true, settings).response.json, JSON.stringify(Object.keys(settings))).to.equal(express.response.json);
    }
  });
});
