import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { trackRecord } from '../../queries/get-track-record/get-track-record.query.js';
import type { Visibility } from '../../queries/shared/visibility.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { pricesStream } from '../../src/domain/scores/reference.events.js';
import { tempDir, testEnv } from '../support/server.js';

/**
 * The track record, the largest free body: built once per as-of date and position of the
 * divergence read models, not per call, and not again for batches that do not touch them.
 */
describe('The track record, built once per as-of date and read-model position', function () {
  this.timeout(60_000);
  let dir: string;
  let s: Services;
  let reads: ReadStore;
  let scans = 0;

  before(async () => {
    dir = tempDir('scores-track-record-cache-');
    s = await openServices(loadConfig(testEnv(dir, '2019-06-14T12:00:00Z', { SCORES_DEMO: 'off' })));
    await s.runner.start();
    // The services' read store, counting the scans of the closed events.
    reads = new Proxy(s.queries.reads, {
      get(target, prop, receiver) {
        if (prop === 'find') return (...args: Parameters<ReadStore['find']>) => (scans++, target.find(...args));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  });
  after(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const asOf = (d: string) => ({ asOf: d }) as unknown as Visibility;
  const record = (d: string) => trackRecord(reads, s.queries.memo, asOf(d));

  it('scans the events once for many calls with one as-of date, and once more for another date', async () => {
    const first = await record('2019-06-13');
    const again = await Promise.all([record('2019-06-13'), record('2019-06-13')]);
    expect(scans).to.equal(1);
    expect(again[0]).to.equal(first);
    await record('2019-06-06');
    expect(scans).to.equal(2);
  });

  it('keeps it across batches that do not touch the divergence read models (another customer\'s account and key)', async () => {
    const before = scans;
    await createAccountWithKey({ events: s.events, clock: s.clock, ids: s.ids, personal: s.personal }, { tier: 'builder' });
    await s.runner.waitForHead();
    await record('2019-06-13');
    expect(scans).to.equal(before);
  });

  it('builds it again once the divergence read models moved on', async () => {
    const before = scans;
    await s.events.append(pricesStream('2019-06-13'), [{ type: 'ClosePricesRecorded', data: { date: '2019-06-13', closes: [{ ticker: 'AAPL', close: 190.5 }] } }]);
    await s.runner.waitForHead();
    await record('2019-06-13');
    expect(scans).to.equal(before + 1);
    await record('2019-06-13');
    expect(scans).to.equal(before + 1);
  });
});
