import { expect } from 'chai';
import { Histogram, Registry } from 'prom-client';
import { RequestHistogram } from '../../src/app/metrics/request-histogram.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

describe("The request histogram (prom-client's exposition, a cheaper observation)", () => {
  it("exposes what prom-client's Histogram exposes for the same observations", async () => {
    const [ours, theirs] = [new Registry(), new Registry()];
    const fast = new RequestHistogram('h_seconds', 'help "text"\nline', BUCKETS, ours);
    const slow = new Histogram({ name: 'h_seconds', help: 'help "text"\nline', labelNames: ['method', 'route', 'status'], buckets: BUCKETS, registers: [theirs] });
    const sets = [
      { method: 'GET', route: '/v1/scores/:ticker', status: '200' },
      { method: 'POST', route: '(none)', status: '404' },
      { method: 'GET', route: '/odd"\\route\n', status: '429' },
    ];
    const observers = sets.map((labels) => fast.labels(labels));
    // Values on the bounds, between them, below the first and above the last.
    const values = [0, 0.001, 0.0011, 0.0025, 0.3, 1, 9.99, 10, 10.5, 1e6, 0.05];
    values.forEach((v, i) => {
      const k = i % sets.length;
      observers[k]!.observe(v);
      slow.labels(sets[k]!).observe(v);
    });
    // A second observer of a label set counts into the same series.
    fast.labels(sets[0]!).observe(0.2);
    slow.labels(sets[0]!).observe(0.2);
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).to.equal(await theirs.metrics());
  });
});
