import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createAccountWithKey, revokeKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { tempDir, testEnv } from '../support/server.js';
import { LedgerMeter } from '../../src/app/metering/meter.js';
import { AppError, ConcurrencyError } from '../../src/core/errors.js';

/** The one meter REST, the problem handler and MCP share: keys, charges and the balance they report. */
describe('The meter', function () {
  this.timeout(60_000);
  let dir: string;
  let services: Services;
  before(async () => {
    dir = tempDir('scores-meter-');
    services = await openServices(loadConfig(testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' })));
    await services.runner.start();
  });
  after(async () => {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const refusal = (attempt: Promise<unknown>) =>
    attempt.then(
      () => null,
      (e: unknown) => e as { code: string; status: number },
    );

  it('reports after a charge the balance that remaining() and usage() report next, and records the charge under the request id', async () => {
    const k = await createAccountWithKey(services, { tier: 'free' });
    await services.runner.waitForHead();
    const p = await services.meter.authenticate(k.key, 'req_meter-test');
    expect(p).to.include({ account_id: k.account_id, key_id: k.key_id, tier: 'free', pro: false, request_id: 'req_meter-test' });
    const before = Number(await services.meter.remaining(p));

    const charged = await services.meter.charge(p, 'screener', 3, 'mcp');
    expect(charged).to.deep.equal({ cost: 6, remaining: String(before - 6), keyBudgetRemaining: null });
    expect(await services.meter.remaining(p)).to.equal(charged.remaining);
    const usage = await services.meter.usage(p);
    expect(String(usage.credits_remaining! + usage.prepaid_credits)).to.equal(charged.remaining);
    expect(usage.used_this_month).to.equal(6);

    const debits = ((await services.events.readStream(ledgerStream(k.account_id))) as unknown as LedgerEvent[]).flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited');
    expect(debits).to.have.length(1);
    expect(debits[0]!.data).to.include({ request_id: 'req_meter-test', endpoint: 'screener', channel: 'mcp', cost: 6 });
  });

  it('refuses a missing, repeated or unknown key with 401, and a revoked one with 403 once the key read model has it', async () => {
    for (const key of [undefined, '', 'sk_live_a, sk_live_b', 'sk_live_nope']) {
      expect(await refusal(services.meter.authenticate(key, 'req_x')), String(key)).to.include({ code: 'unauthorized', status: 401 });
    }
    const k = await createAccountWithKey(services, { tier: 'builder' });
    await services.runner.waitForHead();
    expect((await services.meter.authenticate(k.key, 'req_y')).tier).to.equal('builder');
    await revokeKey(services, k.key_id);
    await services.runner.waitForHead();
    expect(await refusal(services.meter.authenticate(k.key, 'req_z'))).to.include({ code: 'key_forbidden', status: 403 });
  });

  it('answers a debit that lost every race to another replica as 429 rate_limited with a retry delay, charging nothing', async () => {
    const k = await createAccountWithKey(services, { tier: 'builder' });
    await services.runner.waitForHead();
    const p = await services.meter.authenticate(k.key, 'req_race');
    const busy = {
      state: (account: string) => services.ledger.state(account),
      keySpend: (account: string) => services.ledger.keySpend(account),
      execute: () => Promise.reject(new ConcurrencyError(ledgerStream(k.account_id), 7, 8)),
      quote: () => Promise.reject(new Error('no dry run in this test')),
    };
    const meter = new LedgerMeter(busy, services.reads, services.clock);
    expect(await refusal(meter.charge(p, 'scores', 1, 'rest'))).to.include({ code: 'rate_limited', status: 429 });
    expect(((await refusal(meter.charge(p, 'scores', 1, 'rest'))) as unknown as AppError).extensions).to.deep.equal({ retry_after_seconds: 1 });
    expect((await services.events.readStream(ledgerStream(k.account_id))).flatMap((e) => ledgerLines(e as unknown as LedgerEvent)).filter((e) => e.type === 'CreditsDebited')).to.have.length(0);
  });

  it("asks for the caller's address only to refuse a request without a valid key, and limits those by it", async () => {
    const k = await createAccountWithKey(services, { tier: 'builder' });
    await services.runner.waitForHead();
    const unasked = () => {
      throw new Error('a valid key needs no client address');
    };
    expect((await services.meter.authenticate(k.key, 'req_addr', unasked)).account_id).to.equal(k.account_id);
    let asked = 0;
    const address = () => {
      asked++;
      return '198.51.100.7';
    };
    const codes: string[] = [];
    for (let i = 0; i < 200 && !codes.includes('rate_limited'); i++) codes.push((await refusal(services.meter.authenticate('sk_live_nope', `req_${i}`, address)))!.code);
    expect(codes[0]).to.equal('unauthorized');
    expect(codes.at(-1)).to.equal('rate_limited');
    expect(asked).to.equal(codes.length);
  });
});
