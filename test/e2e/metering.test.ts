import { expect } from 'chai';
import { createAccountWithKey, revokeKey, rotateKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';
import type { Tier } from '../../src/domain/plans.js';

describe('Keys, tiers and metering over HTTP', function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    // 200 calls race for credits at once, each on its connection: neither the connections per
    // address nor the requests in flight per key are capped here (test/e2e/client-limits.test.ts).
    server = await startTestServer({ now: '2019-03-15T12:00:00Z', env: { MAX_CONNECTIONS_PER_CLIENT: '100000', MAX_REQUESTS_IN_FLIGHT_PER_CLIENT: '100000' } });
  });
  after(() => server.stop());

  async function newKey(tier: Tier, extra: { pro?: boolean } = {}) {
    const issued = await createAccountWithKey(server.services, { tier, ...extra, email: `${tier}@example.test` });
    await server.services.runner.waitForHead();
    return issued;
  }
  const get = (path: string, key?: string) => getJson(`${server.url}${path}`, key);
  const ledgerOf = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
  const debited = (events: LedgerEvent[]) =>
    events.flatMap((e) => (e.type === 'CreditsDebited' ? [e.data.cost] : [])).reduce((a, b) => a + b, 0);

  describe('When no key or an unknown key is sent', () => {
    it('refuses with 401 unauthorized and no credit header', async () => {
      for (const key of [undefined, 'sk_live_nope']) {
        const r = await get('/v1/scores/AAPL', key);
        expect(r.status).to.equal(401);
        expect(r.body.code).to.equal('unauthorized');
        expect(r.headers.get('x-credits-remaining')).to.equal(null);
      }
    });
  });

  describe('When a key is revoked', () => {
    it('refuses it with 403 key_forbidden', async () => {
      const k = await newKey('hobbyist');
      expect((await get('/v1/scores/AAPL', k.key)).status).to.equal(200);
      await revokeKey(server.services, k.key_id);
      await server.services.runner.waitForHead();
      const r = await get('/v1/scores/AAPL', k.key);
      expect(r.status).to.equal(403);
      expect(r.body.code).to.equal('key_forbidden');
    });
  });

  describe('When a key is rotated', () => {
    it('keeps the old key working for the grace period, and not at all with grace 0', async () => {
      const k = await newKey('hobbyist');
      const withGrace = await rotateKey(server.services, k.key_id, 3600);
      await server.services.runner.waitForHead();
      expect((await get('/v1/scores/AAPL', k.key)).status).to.equal(200);
      expect((await get('/v1/scores/AAPL', withGrace.key)).status).to.equal(200);
      const immediate = await rotateKey(server.services, withGrace.key_id, 0);
      await server.services.runner.waitForHead();
      const old = await get('/v1/scores/AAPL', withGrace.key);
      expect(old.status).to.equal(403);
      expect(old.body.code).to.equal('key_forbidden');
      expect((await get('/v1/scores/AAPL', immediate.key)).status).to.equal(200);
    });
  });

  describe('When a call succeeds', () => {
    it('charges the rate card cost, durably, and reports the balance', async () => {
      const k = await newKey('free');
      const r = await get('/v1/scores/AAPL', k.key);
      expect(r.status).to.equal(200);
      expect(r.headers.get('x-credits-remaining')).to.equal('998');
      const h = await get('/v1/scores/AAPL/history?start=2019-03-01&end=2019-03-08', k.key);
      expect(h.body.count).to.equal(6);
      expect(h.headers.get('x-credits-remaining')).to.equal('992');
      const entries = (await ledgerOf(k.account_id)).filter((e) => e.type === 'CreditsDebited');
      expect(entries.map((e) => e.type === 'CreditsDebited' && [e.data.endpoint, e.data.cost, e.data.channel])).to.deep.equal([
        ['scores', 2, 'rest'],
        ['history', 6, 'rest'],
      ]);
      expect(entries[0]!.type === 'CreditsDebited' && entries[0]!.data.request_id).to.equal(r.headers.get('x-request-id'));
    });

    it('carries the credit header on an error after authentication too, and charges nothing', async () => {
      const k = await newKey('free');
      const r = await get('/v1/scores/NOPEX', k.key);
      expect(r.status).to.equal(404);
      expect(r.headers.get('x-credits-remaining')).to.equal('1000');
      expect(debited(await ledgerOf(k.account_id))).to.equal(0);
    });

    it('reports unlimited for enterprise', async () => {
      const k = await newKey('enterprise');
      const r = await get('/v1/scores/AAPL', k.key);
      expect(r.headers.get('x-credits-remaining')).to.equal('unlimited');
    });
  });

  describe('When 200 calls race for the last credits with overage off', () => {
    it('lets exactly as many succeed as the credits cover, refuses the rest with 429 and never goes below zero', async () => {
      const k = await newKey('free');
      // The race is about credits: the key's request rate is lifted so that none is refused for it.
      await setRateLimit(server.services, k.account_id, 'unlimited');
      await server.services.runner.waitForHead();
      // Leave 101 credits: 50 calls of 2 fit, the 51st does not.
      await server.services.ledger.debit(k.account_id, { request_id: 'setup', endpoint: 'history', channel: 'rest', cost: 899 });
      const results = await Promise.all(Array.from({ length: 200 }, () => get('/v1/scores/MSFT', k.key)));
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status === 429);
      expect(ok).to.have.length(50);
      expect(refused).to.have.length(150);
      for (const r of refused) {
        expect(r.body.code).to.equal('credits_exhausted');
        expect(r.headers.get('x-credits-remaining')).to.equal('1');
      }
      const remaining = ok.map((r) => Number(r.headers.get('x-credits-remaining')));
      expect(Math.min(...remaining)).to.equal(1);
      expect(new Set(remaining).size).to.equal(50);
      const events = await ledgerOf(k.account_id);
      expect(debited(events)).to.equal(899 + 100);
      const usage = await get('/v1/usage', k.key);
      expect(usage.body).to.include({ used_this_month: 999, credits_remaining: 1, prepaid_credits: 0 });
    });
  });

  describe('GET /v1/usage', () => {
    it('has exactly the spec fields, free, with the rate card from the metering table', async () => {
      const k = await newKey('builder', { pro: true });
      const r = await get('/v1/usage', k.key);
      expect(r.status).to.equal(200);
      expect(Object.keys(r.body).sort()).to.deep.equal(
        [
          'allow_overage',
          'credits_remaining',
          'entitlements',
          'monthly_allowance',
          'overage_cost_usd',
          'overage_credits',
          'overage_per_1k_usd',
          'prepaid_credits',
          'pro_member',
          'rate_card',
          'resets_at',
          'tier',
          'used_this_month',
        ].sort(),
      );
      expect(r.body).to.deep.include({
        tier: 'builder',
        pro_member: true,
        monthly_allowance: 250_000,
        used_this_month: 0,
        credits_remaining: 250_000,
        overage_per_1k_usd: 0.4,
        allow_overage: false,
        resets_at: '2019-04-01T00:00:00.000Z',
        entitlements: { credits: 250_000, delay_days: 0, coverage: 'all', history_days: 1825 },
      });
      expect(r.body.rate_card.scores).to.deep.equal({ credits: 2, unit: 'call', endpoint: 'GET /v1/scores/{ticker}' });
      expect(r.body.rate_card.history).to.include({ credits: 1, unit: 'row' });
      expect(r.body.rate_card.screener).to.include({ credits: 2, unit: 'row' });
      expect(r.body.rate_card.divergence).to.include({ credits: 3, unit: 'row' });
      expect(r.headers.get('x-credits-remaining')).to.equal('250000');
    });
  });
});
