import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import type { fixedClock } from '../../src/core/clock.js';
import { expressAuthentication } from '../../src/app/http/authentication.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';
import type { Express, Request } from 'express';
import { createApp } from '../../src/app/http/app.js';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../support/processes.js';

describe('Across a month boundary (SCORES_NOW)', function () {
  this.timeout(120_000);
  let server: TestServer;
  let clock: ReturnType<typeof fixedClock>;
  before(async () => {
    server = await startTestServer({ now: '2019-03-15T12:00:00Z' });
    clock = server.services.clock as ReturnType<typeof fixedClock>;
  });
  after(() => server.stop());

  const alerts = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap((e) =>
      e.type === 'UsageAlertRaised' ? [`${e.data.period}:${e.data.threshold}`] : [],
    );

  it('resets the allowance, carries prepaid credits over and re-arms the alerts', async () => {
    const k = await createAccountWithKey(server.services, { tier: 'free', email: 'boundary@example.test' });
    await server.services.runner.waitForHead();
    const ledger = server.services.ledger;
    await ledger.debit(k.account_id, { request_id: 'a', endpoint: 'history', channel: 'rest', cost: 760 });
    await ledger.execute(k.account_id, { type: 'PurchasePack', data: { pack_id: 'p1', credits: 500 } });
    // 240 from the allowance, 160 from the pack.
    await ledger.debit(k.account_id, { request_id: 'b', endpoint: 'history', channel: 'rest', cost: 400 });
    expect(await alerts(k.account_id)).to.deep.equal(['2019-03:75', '2019-03:90', '2019-03:100']);
    // The running server's alert dispatcher mails each one (embedded: .eml files in the outbox).
    const outbox = join(server.dir, 'outbox');
    await until(() => existsSync(outbox) && readdirSync(outbox).filter((f) => f.endsWith('.eml')).length === 3, 15_000, 100);
    const mails = readdirSync(outbox).map((f) => readFileSync(join(outbox, f), 'utf8'));
    expect(mails.every((m) => /To: boundary@example\.test/.test(m))).to.equal(true);
    expect(mails.some((m) => /100%/.test(m))).to.equal(true);
    const march = await getJson(`${server.url}/v1/usage`, k.key);
    expect(march.body).to.include({ used_this_month: 1000, credits_remaining: 0, prepaid_credits: 340, resets_at: '2019-04-01T00:00:00.000Z' });
    expect(march.headers.get('x-credits-remaining')).to.equal('340');

    clock.set('2019-04-01T00:00:01Z');
    const april = await getJson(`${server.url}/v1/usage`, k.key);
    expect(april.body).to.include({
      used_this_month: 0,
      credits_remaining: 1000,
      prepaid_credits: 340,
      overage_credits: 0,
      resets_at: '2019-05-01T00:00:00.000Z',
    });
    expect(april.headers.get('x-credits-remaining')).to.equal('1340');

    await ledger.debit(k.account_id, { request_id: 'c', endpoint: 'history', channel: 'rest', cost: 760 });
    expect(await alerts(k.account_id)).to.deep.equal(['2019-03:75', '2019-03:90', '2019-03:100', '2019-04:75']);
    const after = await getJson(`${server.url}/v1/usage`, k.key);
    expect(after.body).to.include({ used_this_month: 760, credits_remaining: 240, prepaid_credits: 340 });
  });
});

describe('Tier gating', function () {
  this.timeout(120_000);
  let server: TestServer;
  let app: Express;
  before(async () => {
    server = await startTestServer({ now: '2019-03-15T12:00:00Z' });
    app = createApp(server.services);
  });
  after(() => server.stop());

  const requestWith = (key: string) => ({ app, ip: '127.0.0.1', header: (n: string) => (n.toLowerCase() === 'x-api-key' ? key : undefined) }) as unknown as Request;

  it('refuses a plan below the endpoint minimum with 403 tier, from the rate card', async () => {
    for (const [tier, endpoint, allowed] of [
      ['hobbyist', 'earnings', false],
      ['builder', 'earnings', true],
      ['builder', 'divergence_events', false],
      ['quant', 'divergence_open', true],
      ['free', 'webhooks', false],
    ] as const) {
      const k = await createAccountWithKey(server.services, { tier });
      await server.services.runner.waitForHead();
      const attempt = expressAuthentication(requestWith(k.key), 'api_key', [endpoint]);
      if (allowed) expect((await attempt).tier).to.equal(tier);
      else {
        const err = await attempt.then(
          () => null,
          (e: unknown) => e as { code: string; status: number },
        );
        expect(err, `${tier} on ${endpoint}`).to.include({ code: 'tier', status: 403 });
      }
    }
  });

  it('lets a Pro overlay lift a free key to the full universe but not past tier gates', async () => {
    const k = await createAccountWithKey(server.services, { tier: 'free', pro: true });
    await server.services.runner.waitForHead();
    const p = await expressAuthentication(requestWith(k.key), 'api_key', ['scores']);
    expect(p.entitlements).to.deep.equal({ credits: 5000, delay_days: 0, coverage: 'all', history_days: 365 });
    const gated = await expressAuthentication(requestWith(k.key), 'api_key', ['webhooks']).catch((e: unknown) => e as { code: string });
    expect(gated).to.have.property('code', 'tier');
  });
});
