import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { divergenceProjection } from '../../projections/divergence/divergence.projection.js';
import { trackRecord } from '../../queries/get-track-record/get-track-record.query.js';
import type { Visibility } from '../../queries/shared/visibility.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { tempDir, testEnv } from '../support/server.js';

/** The track record, the largest free body: built once per as-of date and divergence position, not per call. */
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
    reads = new Proxy(s.reads, {
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

  it('scans the events once for many calls with one as-of date, and once more for another date', async () => {
    const first = await trackRecord(reads, asOf('2019-06-13'));
    const again = await Promise.all([trackRecord(reads, asOf('2019-06-13')), trackRecord(reads, asOf('2019-06-13'))]);
    expect(scans).to.equal(1);
    expect(again[0]).to.equal(first);
    await trackRecord(reads, asOf('2019-06-06'));
    expect(scans).to.equal(2);
  });

  it('builds it again once the divergence read models moved on', async () => {
    const before = scans;
    await s.reads.commit({ writes: [], checkpoints: { [divergenceProjection.name]: '99999999999999999999' } });
    await trackRecord(reads, asOf('2019-06-13'));
    expect(scans).to.equal(before + 1);
    await trackRecord(reads, asOf('2019-06-13'));
    expect(scans).to.equal(before + 1);
  });
});
