import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { AppError } from '../../src/core/errors.js';
import { tempDir, testEnv } from '../support/server.js';

/**
 * A pack's purchase reference is an idempotency key, decided by the ledger itself: two writers
 * (the API and the CLI, two CLI runs) buying under the same reference at the same moment credit
 * it once, because the loser's append fails on its expected revision and is decided again.
 */
describe('Pack purchase references across two writers', function () {
  this.timeout(60_000);
  let dir: string;
  let a: Services;
  let b: Services;
  before(async () => {
    dir = tempDir('scores-packs-');
    const env = testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' });
    // Two containers on one store: two processes, each with its own log writer and ledger cache.
    a = await openServices(loadConfig(env));
    b = await openServices(loadConfig(env));
  });
  after(async () => {
    await a.close();
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('credits each reference once when both buy it at the same moment', async () => {
    const { account_id } = await createAccountWithKey(a, { tier: 'hobbyist' });
    for (let i = 0; i < 25; i++) {
      const buy = { type: 'PurchasePack' as const, data: { pack_id: `inv-${i}`, credits: 100 } };
      const [x, y] = await Promise.all([a.ledger.execute(account_id, buy), b.ledger.execute(account_id, buy)]);
      expect(x.events.length + y.events.length, `inv-${i}`).to.equal(1);
    }
    const purchases = (await a.events.readStream(ledgerStream(account_id))).filter((e) => e.type === 'PackPurchased');
    expect(purchases.map((e) => (e.data as { pack_id: string }).pack_id)).to.deep.equal(Array.from({ length: 25 }, (_, i) => `inv-${i}`));
    expect((await b.ledger.state(account_id)).prepaid).to.equal(2_500);
  });

  it('refuses another purchase under a used reference with 409, from either writer', async () => {
    const { account_id } = await createAccountWithKey(a, { tier: 'hobbyist' });
    await a.ledger.execute(account_id, { type: 'PurchasePack', data: { pack_id: 'inv-x', credits: 100 } });
    const err = await b.ledger.execute(account_id, { type: 'PurchasePack', data: { pack_id: 'inv-x', credits: 5_000 } }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(AppError);
    expect((err as AppError).code).to.equal('conflict');
    expect((await a.ledger.state(account_id)).prepaid).to.equal(100);
  });
});
