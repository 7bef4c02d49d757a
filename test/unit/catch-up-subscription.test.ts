import { expect } from 'chai';
import { LogWakeups, subscribeCatchUp, type CatchUpSource } from '../../src/core/catch-up-subscription.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';

const pos = (n: number) => String(n).padStart(20, '0');
const event = (n: number): RecordedEvent =>
  ({ id: `e${n}`, streamId: 's', revision: n - 1, type: 'T', data: {}, metadata: {}, position: pos(n), recordedAt: '2019-01-01T00:00:00.000Z' });

/** A log that grows by one event every `everyMs` (a wake-up each time), and counts the reads made of it. */
function growingLog(everyMs: number, minIntervalMs?: number) {
  let head = 0;
  const reads: number[] = [];
  const wakeups = new LogWakeups();
  const timer = setInterval(() => {
    head++;
    wakeups.wakeAll();
  }, everyMs);
  const source: CatchUpSource = {
    async read(after, max) {
      reads.push(performance.now());
      await new Promise((r) => setImmediate(r)); // a round trip's worth of waiting
      const from = after === null ? 1 : Number(after) + 1;
      return Array.from({ length: Math.max(0, Math.min(max, head - from + 1)) }, (_, i) => event(from + i));
    },
    head: async () => (head ? pos(head) : null),
    wakeups,
    pollMs: 1000,
    isClosed: () => false,
    ...(minIntervalMs !== undefined && { minIntervalMs }),
  };
  return { source, reads, stop: () => clearInterval(timer), head: () => head };
}

describe('A catch-up subscription following a log that grows under load (catch-up-subscription.ts)', function () {
  const follow = async (minIntervalMs?: number) => {
    const log = growingLog(1, minIntervalMs);
    const seen: string[] = [];
    const sub = subscribeCatchUp(log.source, { after: null, onEvents: async (batch) => void seen.push(...batch.map((e) => e.position)) });
    await new Promise((r) => setTimeout(r, 300));
    log.stop();
    await new Promise((r) => setTimeout(r, 3 * (minIntervalMs ?? 0) + 20));
    await sub.stop();
    return { reads: log.reads, seen, head: log.head() };
  };

  it('reads at most once per minIntervalMs while following the tail, and misses nothing', async () => {
    const { reads, seen, head } = await follow(50);
    // 300 ms at 50 ms apart: about 6 reads (a few more for timers' slack), where it would read at every commit.
    expect(reads.length, `${reads.length} reads`).to.be.at.most(10);
    for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).to.be.at.least(45);
    expect(seen).to.deep.equal(Array.from({ length: head }, (_, i) => pos(i + 1)));
  });

  it('without it, reads again as soon as the log has grown', async () => {
    const { reads, seen, head } = await follow();
    expect(reads.length, `${reads.length} reads`).to.be.greaterThan(20);
    expect(seen).to.deep.equal(Array.from({ length: head }, (_, i) => pos(i + 1)));
  });

  it('reads at once when an idle log grows (the interval counts from the last read, not the wake-up)', async () => {
    const wakeups = new LogWakeups();
    let head = 0;
    const source: CatchUpSource = {
      read: async (after) => (head > Number(after ?? 0) ? [event(head)] : []),
      head: async () => (head ? pos(head) : null),
      wakeups,
      pollMs: 10_000,
      isClosed: () => false,
      minIntervalMs: 500,
    };
    const got: number[] = [];
    const sub = subscribeCatchUp(source, { after: null, onEvents: async () => void got.push(performance.now()) });
    await new Promise((r) => setTimeout(r, 600));
    const at = performance.now();
    head = 1;
    wakeups.wakeAll();
    while (got.length === 0 && performance.now() - at < 1000) await new Promise((r) => setTimeout(r, 1));
    await sub.stop();
    // Counted from the wake-up, it would wait 500 ms.
    expect(got[0]! - at).to.be.below(400);
  });
});
