import { expect } from 'chai';
import { createAccountWithKey, issueKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { PLANS, RATE_BURST_FACTOR } from '../../src/domain/plans.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** Request-rate limits per account over real HTTP: the tier's token bucket, shared by the account's keys, the operator's override, the headers. */
describe('Rate limits per account', function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    // Behind a proxy on loopback: X-Forwarded-For names the client of a key-less request. The
    // floods here are of hundreds of calls at once: the requests in flight per key are not capped,
    // so that each answer is the request rate's (test/e2e/client-limits.test.ts tests the cap).
    server = await startTestServer({ now: '2019-04-10T12:00:00Z', env: { TRUST_PROXY: 'loopback', MAX_REQUESTS_IN_FLIGHT_PER_CLIENT: '100000' } });
  });
  after(() => server.stop());

  const get = (path: string, headers: Record<string, string>) => fetch(`${server.url}${path}`, { headers });
  const newKey = async (tier: 'free' | 'hobbyist' | 'quant') => {
    const k = await createAccountWithKey(server.services, { tier });
    await server.services.runner.waitForHead();
    return k;
  };
  const debitsOf = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited');

  it('tells every authenticated response its policy and what is left (IETF RateLimit-Policy, RateLimit)', async () => {
    const k = await newKey('hobbyist');
    const rate = PLANS.hobbyist.rate_per_second;
    const first = await get('/v1/scores/AAPL', { 'X-API-Key': k.key });
    expect(first.status).to.equal(200);
    expect(first.headers.get('ratelimit-policy')).to.equal(`"per-account";q=${rate * RATE_BURST_FACTOR};w=${RATE_BURST_FACTOR}`);
    expect(first.headers.get('ratelimit')).to.match(new RegExp(`^"per-account";r=${rate * RATE_BURST_FACTOR - 1};t=\\d+$`));
    // An error after authentication carries them too.
    const bad = await get('/v1/scores/AAPL/history?start=nope', { 'X-API-Key': k.key });
    expect(bad.status).to.equal(400);
    expect(bad.headers.get('ratelimit')).to.match(/^"per-account";r=\d+;t=\d+$/);
  });

  it('refuses part of a flood of 400 concurrent calls from one hobbyist key with 429 rate_limited, and bills only the answered ones', async () => {
    const k = await newKey('hobbyist');
    const answers = await Promise.all(Array.from({ length: 400 }, () => get('/v1/scores/MSFT', { 'X-API-Key': k.key })));
    const ok = answers.filter((r) => r.status === 200);
    const limited = answers.filter((r) => r.status === 429);
    expect(ok.length + limited.length).to.equal(400);
    expect(ok.length).to.be.at.least(PLANS.hobbyist.rate_per_second * RATE_BURST_FACTOR);
    expect(limited.length).to.be.greaterThan(0);
    for (const r of limited.slice(0, 20)) {
      expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const body = (await r.json()) as { code: string };
      expect(body.code).to.equal('rate_limited');
      expect(Number(r.headers.get('retry-after'))).to.be.at.least(1);
      expect(r.headers.get('x-credits-remaining')).to.match(/^\d+$/);
    }
    const ids = new Set(ok.map((r) => r.headers.get('x-request-id')));
    const charged = await debitsOf(k.account_id);
    expect(charged.map((e) => e.type === 'CreditsDebited' && e.data.request_id).sort()).to.deep.equal([...ids].sort());
  });

  /** `count` concurrent calls spread over `keys`, with the seconds they took (the bucket refills meanwhile). */
  const spread = async (keys: string[], count: number) => {
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: count }, (_, i) => get('/v1/scores/AAPL', { 'X-API-Key': keys[i % keys.length]! })));
    return { answers, seconds: (performance.now() - started) / 1000 };
  };

  it("shares one bucket among an account's keys: two keys of a free account together get one burst, not two", async () => {
    const first = await newKey('free');
    const second = await issueKey(server.services, first.account_id);
    await server.services.runner.waitForHead();
    const rate = PLANS.free.rate_per_second;
    const burst = rate * RATE_BURST_FACTOR;
    const { answers, seconds } = await spread([first.key, second.key], burst * 3);
    const ok = answers.filter((r) => r.status === 200);
    expect(ok.length + answers.filter((r) => r.status === 429).length).to.equal(answers.length);
    // One bucket: its burst plus what it refilled while the calls ran (two buckets would answer twice the burst).
    expect(ok.length, `${ok.length} answered in ${seconds.toFixed(2)} s`).to.be.at.least(burst).and.at.most(burst + Math.floor(seconds * rate));
    expect(ok[0]!.headers.get('ratelimit-policy')).to.equal(`"per-account";q=${burst};w=${RATE_BURST_FACTOR}`);
    expect(await debitsOf(first.account_id)).to.have.length(ok.length);
  });

  it("applies the operator's override to the account as a whole, however many keys it has", async () => {
    const k = await newKey('quant');
    const more = [await issueKey(server.services, k.account_id), await issueKey(server.services, k.account_id)];
    await setRateLimit(server.services, k.account_id, 1);
    await server.services.runner.waitForHead();
    const { answers, seconds } = await spread([k.key, ...more.map((m) => m.key)], 9);
    const ok = answers.filter((r) => r.status === 200).length;
    expect(ok, `${ok} answered in ${seconds.toFixed(2)} s`).to.be.at.least(2).and.at.most(2 + Math.floor(seconds));
    const limited = answers.find((r) => r.status === 429)!;
    expect(((await limited.json()) as { code: string; detail: string }).detail).to.match(/^This account's keys may send 1 request per second together/);
  });

  it("follows the operator's override: a lower rate, unlimited (no headers), back to the plan's", async () => {
    const k = await newKey('quant');
    await setRateLimit(server.services, k.account_id, 1);
    await server.services.runner.waitForHead();
    const burst = await Promise.all(Array.from({ length: 5 }, () => get('/v1/scores/AAPL', { 'X-API-Key': k.key })));
    expect(burst.filter((r) => r.status === 429)).to.have.length(3);
    expect(burst[0]!.headers.get('ratelimit-policy')).to.equal('"per-account";q=2;w=2');

    await setRateLimit(server.services, k.account_id, 'unlimited');
    await server.services.runner.waitForHead();
    const flood = await Promise.all(Array.from({ length: 300 }, () => get('/v1/scores/AAPL', { 'X-API-Key': k.key })));
    expect(flood.every((r) => r.status === 200)).to.equal(true);
    expect(flood[0]!.headers.get('ratelimit-policy')).to.equal(null);

    await setRateLimit(server.services, k.account_id, 'tier');
    await server.services.runner.waitForHead();
    const back = await get('/v1/scores/AAPL', { 'X-API-Key': k.key });
    expect(back.headers.get('ratelimit-policy')).to.equal(`"per-account";q=${PLANS.quant.rate_per_second * RATE_BURST_FACTOR};w=${RATE_BURST_FACTOR}`);
  });

  it("counts REST and MCP calls of an account's keys in one bucket: over it, an MCP call with its other key is refused 429 rate_limited too, charged nothing", async () => {
    const k = await newKey('quant');
    const other = await issueKey(server.services, k.account_id);
    await setRateLimit(server.services, k.account_id, 1);
    await server.services.runner.waitForHead();
    const rest = await Promise.all([get('/v1/scores/AAPL', { 'X-API-Key': k.key }), get('/v1/scores/AAPL', { 'X-API-Key': k.key })]);
    expect(rest.map((r) => r.status)).to.deep.equal([200, 200]);
    const mcp = await fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-API-Key': other.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_scores', arguments: { ticker: 'AAPL' } } }),
    });
    expect(mcp.status).to.equal(429);
    expect(((await mcp.json()) as { code: string }).code).to.equal('rate_limited');
    expect(mcp.headers.get('ratelimit-policy')).to.equal('"per-account";q=2;w=2');
    expect(Number(mcp.headers.get('retry-after'))).to.be.at.least(1);
    expect(await debitsOf(k.account_id)).to.have.length(2);
  });

  it('refuses an override out of range with bad_request', async () => {
    const k = await newKey('free');
    for (const v of [0, -1, 1.5, 2_000_000]) {
      const err = await setRateLimit(server.services, k.account_id, v).catch((e: unknown) => e);
      expect(err, String(v)).to.include({ code: 'bad_request' });
    }
  });

  it('limits requests without a valid key per client address: 429 instead of 401 once over, other clients unaffected', async () => {
    const from = (ip: string) => ({ 'X-API-Key': 'sk_live_not-a-key', 'X-Forwarded-For': ip });
    const answers = await Promise.all(Array.from({ length: 60 }, () => get('/v1/scores/AAPL', from('10.9.9.9'))));
    const statuses = new Set(answers.map((r) => r.status));
    expect([...statuses].sort()).to.deep.equal([401, 429]);
    const limited = answers.find((r) => r.status === 429)!;
    expect(((await limited.json()) as { code: string }).code).to.equal('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).to.be.at.least(1);
    expect((await get('/v1/scores/AAPL', from('10.9.9.10'))).status).to.equal(401);
  });
});
