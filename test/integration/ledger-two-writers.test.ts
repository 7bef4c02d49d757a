import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { systemClock } from '../../src/core/clock.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { tempDir, testEnv } from '../support/server.js';

const CALLS = 1500;
const IN_FLIGHT = 60;

/**
 * Two API replicas charging one account: each has its own ledger service (its own cache and
 * queue) over one log, so their appends to the account's stream collide on its revision. A
 * collision is decided again on the fresh state, after a short random pause, up to 25 times; a
 * call that lost every time is refused with the ConcurrencyError (the meter answers it 429,
 * nothing charged). So: every call charged at most once, what the ledger used is exactly the
 * charged calls, and nearly all calls are charged.
 */
async function chargeFromTwoWriters(events: EventStore, s: Services): Promise<void> {
  const { account_id: account } = await createAccountWithKey({ ...s, events }, { tier: 'quant' });
  const writers = [new LedgerService(events, s.clock), new LedgerService(events, s.clock)];
  let issued = 0;
  let charged = 0;
  const refused: unknown[] = [];
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      while (issued < CALLS) {
        const n = issued++;
        await writers[lane % 2]!.debit(account, { request_id: `req_${n}`, endpoint: 'scores', channel: 'rest', cost: 2 }).then(
          () => charged++,
          (err: unknown) => refused.push(err),
        );
      }
    }),
  );
  expect(refused.filter((e) => !(e instanceof ConcurrencyError)).map(String)).to.deep.equal([]);
  expect(charged + refused.length).to.equal(CALLS);
  expect(refused.length, 'calls that lost every retry').to.be.below(CALLS / 20);
  const lines = (await events.readStream(ledgerStream(account))).flatMap((e) => ledgerLines(e as unknown as LedgerEvent)).filter((l) => l.type === 'CreditsDebited');
  expect(new Set(lines.map((l) => (l.data as { request_id: string }).request_id)).size).to.equal(lines.length);
  expect(lines.length).to.equal(charged);
  expect(foldLedger((await events.readStream(ledgerStream(account)))).used_allowance).to.equal(charged * 2);
}

describe('Two ledger writers on one account (two replicas)', function () {
  this.timeout(180_000);
  let dir: string;
  let s: Services;

  before(async () => {
    dir = tempDir('scores-two-writers-');
    s = await openServices(loadConfig(testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' })));
  });

  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`charges each of ${CALLS} calls at most once, nearly all, on the embedded log`, async () => {
    await chargeFromTwoWriters(s.events, s);
  });

  it(`does the same on the PostgreSQL log`, async function () {
    const url = process.env['POSTGRES_URL'];
    if (!url) return this.skip(); // runs when POSTGRES_URL is set (npm run engines prints it)
    const store = new PostgresEventStore(url, systemClock, { schema: `two_writers_${randomUUID().replaceAll('-', '').slice(0, 10)}` });
    try {
      await chargeFromTwoWriters(store, s);
    } finally {
      await store.close();
    }
  });

  it("reads back on one replica, with `fresh`, a debit the other replica appended a moment ago (what /v1/usage shows)", async () => {
    const { account_id: account } = await createAccountWithKey(s, { tier: 'quant' });
    const [a, b] = [new LedgerService(s.events, s.clock), new LedgerService(s.events, s.clock)];
    const before = (await b.state(account)).used_allowance;
    await a.debit(account, { request_id: 'req_fresh', endpoint: 'scores', channel: 'rest', cost: 7 });
    // b's read of a moment ago is still within its 250 ms: without `fresh` it would answer from it.
    expect((await b.state(account, { fresh: true })).used_allowance).to.equal(before + 7);
  });
});
