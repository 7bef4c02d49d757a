import { expect } from 'chai';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { problemHandler } from '../../src/app/http/problem.js';
import { ConcurrencyError } from '../../src/core/errors.js';

describe('The problem handler', () => {
  it('answers a command that lost every race for its stream 429 rate_limited with Retry-After, not 500', async () => {
    const logged: unknown[] = [];
    const app = express();
    app.post('/v1/packs', () => {
      throw new ConcurrencyError('ledger-acc-1', 41, 42);
    });
    app.use(problemHandler(() => 'http://localhost', { error: (obj) => logged.push(obj) }, { remaining: async () => 'unlimited' }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/packs`, { method: 'POST' });
      expect(res.status).to.equal(429);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.headers.get('retry-after')).to.equal('1');
      const body = (await res.json()) as { code: string; retry_after_seconds: number; detail: string };
      expect(body.code).to.equal('rate_limited');
      expect(body.retry_after_seconds).to.equal(1);
      expect(body.detail).to.include('nothing was changed');
      expect(logged, 'not an unhandled error').to.deep.equal([]);
    } finally {
      server.close();
    }
  });
});
