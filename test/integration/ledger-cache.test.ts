import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { tempDir, testEnv } from '../support/server.js';

/** The log as `events`, counting the reads of `streamId`; `gate` holds what each read found until it resolves. */
function watched(events: EventStore, streamId: string) {
  const seen = { reads: 0, gate: Promise.resolve() };
  const store = new Proxy(events, {
    get(target, prop, receiver) {
      if (prop !== 'readStream') return Reflect.get(target, prop, receiver) as unknown;
      return async (id: string, options?: Parameters<EventStore['readStream']>[1]) => {
        const found = await target.readStream(id, options);
        if (id === streamId) {
          seen.reads++;
          await seen.gate;
        }
        return found;
      };
    },
  });
  return { store, seen };
}

/**
 * One API process's ledger cache when another process (a replica) has charged the same account:
 * the calls that find the cached state stale share one read of the stream.
 */
describe('Ledger cache behind another writer', () => {
  let dir: string;
  let s: Services;

  before(async () => {
    dir = tempDir('scores-ledger-cache-');
    s = await openServices(loadConfig(testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' })));
  });

  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function chargedElsewhere(calls: number) {
    const { account_id: account } = await createAccountWithKey(s, { tier: 'quant' });
    const { store, seen } = watched(s.events, ledgerStream(account));
    // freshForMs 0: every state() finds the cache stale, as calls do 250 ms after the last read.
    const here = new LedgerService(store, s.clock, { freshForMs: 0 });
    await here.state(account);
    const replica = new LedgerService(s.events, s.clock);
    for (let i = 0; i < calls; i++) await replica.debit(account, { request_id: `req_${i}`, endpoint: 'scores', channel: 'rest', cost: 2 });
    seen.reads = 0;
    return { account, here, seen };
  }

  it('reads the stream once for 50 calls in flight, and each sees the other writer\'s debits', async () => {
    const { account, here, seen } = await chargedElsewhere(40);
    let open!: () => void;
    seen.gate = new Promise((resolve) => (open = resolve));
    const states = Array.from({ length: 50 }, () => here.state(account));
    open();
    const used = (await Promise.all(states)).map((st) => st.used_allowance);
    expect(seen.reads).to.equal(1);
    expect(new Set(used)).to.deep.equal(new Set([80]));
  });

  it('reads again for a fresh state asked while a read is in flight, and sees an append made meanwhile', async () => {
    const { account, here, seen } = await chargedElsewhere(3);
    let open!: () => void;
    seen.gate = new Promise((resolve) => (open = resolve));
    const stale = here.state(account);
    await new LedgerService(s.events, s.clock).debit(account, { request_id: 'req_late', endpoint: 'scores', channel: 'rest', cost: 2 });
    const fresh = here.state(account, { fresh: true });
    open();
    expect((await fresh).used_allowance).to.equal(8);
    expect((await stale).used_allowance).to.equal(6);
    expect(seen.reads).to.equal(2);
  });
});
