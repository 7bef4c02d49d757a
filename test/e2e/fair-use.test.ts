import { expect } from 'chai';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { rawGet as raw } from '../support/raw-get.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** Compression and daily validators: large bodies cost less to send, and a poller downloads a daily body once. */
describe('Fair use of shared capacity', function () {
  this.timeout(120_000);
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    ({ key } = await createAccountWithKey(server.services, { tier: 'quant' }));
    await server.services.runner.waitForHead();
  });
  after(() => server.stop());

  it('compresses a large body with br or gzip as the client accepts, the same JSON once decoded', async () => {
    const url = `${server.url}/v1/track-record`;
    const plain = await raw(url, { 'X-API-Key': key });
    expect(plain.status).to.equal(200);
    expect(plain.headers['content-encoding']).to.equal(undefined);
    // A cache must not give one client's answer to the other: both say they vary.
    expect(plain.headers['vary']).to.equal('Accept-Encoding');
    const br = await raw(url, { 'X-API-Key': key, 'Accept-Encoding': 'br' });
    expect(br.headers['content-encoding']).to.equal('br');
    expect(br.headers['vary']).to.equal('Accept-Encoding');
    expect(brotliDecompressSync(br.body).toString()).to.equal(plain.body.toString());
    expect(br.body.length).to.be.lessThan(plain.body.length / 4);
    const gz = await raw(url, { 'X-API-Key': key, 'Accept-Encoding': 'gzip' });
    expect(gz.headers['content-encoding']).to.equal('gzip');
    expect(gunzipSync(gz.body).toString()).to.equal(plain.body.toString());
  });

  it('sends a small body as it is', async () => {
    const small = await raw(`${server.url}/v1/scores/AAPL`, { 'X-API-Key': key, 'Accept-Encoding': 'br, gzip' });
    expect(small.status).to.equal(200);
    expect(small.headers['content-encoding']).to.equal(undefined);
    expect(JSON.parse(small.body.toString())).to.have.property('ticker', 'AAPL');
    // Without Accept-Encoding the compression middleware is not set up at all (its cost is in
    // `npm run bench`): the answer carries the same headers.
    const plain = await raw(`${server.url}/v1/scores/AAPL`, { 'X-API-Key': key });
    const names = (h: Record<string, unknown>) => Object.keys(h).filter((n) => !['date', 'x-request-id', 'ratelimit', 'x-credits-remaining'].includes(n)).sort();
    expect(names(plain.headers)).to.deep.equal(names(small.headers));
    expect(plain.headers['vary']).to.equal('Accept-Encoding');
    expect(plain.body.toString()).to.equal(small.body.toString());
  });

  for (const path of ['/v1/track-record', '/v1/meta', '/v1/coverage']) {
    it(`answers ${path} with an ETag, and 304 with no body to a client that has it`, async () => {
      const first = await raw(`${server.url}${path}`, { 'X-API-Key': key });
      const tag = first.headers['etag'];
      expect(tag).to.match(/^W\/"[A-Za-z0-9_-]+"$/);
      const again = await raw(`${server.url}${path}`, { 'X-API-Key': key, 'If-None-Match': String(tag) });
      expect(again.status).to.equal(304);
      expect(again.body.length).to.equal(0);
      expect(again.headers['x-credits-remaining']).to.be.a('string');
      const stale = await raw(`${server.url}${path}`, { 'X-API-Key': key, 'If-None-Match': 'W/"older"' });
      expect(stale.status).to.equal(200);
      expect(stale.body.toString()).to.equal(first.body.toString());
    });
  }
});
