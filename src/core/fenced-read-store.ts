/**
 * A ReadStore whose commits are fenced by a job's lease (JobLease.check): a read model's projector
 * that lost its lease while paused commits nothing (LeaseLostError) once it knows, and the stored
 * checkpoints (never moved back, a batch behind them skipped) absorb what a write in the window
 * between check and commit could do (docs/scaling.md, "Projections per read model"). A commit of
 * checkpoints alone is not fenced.
 */
import type { JobLease } from './lease.js';
import type { ReadStore } from './read-store.port.js';

export function fencedReadStore(store: ReadStore, lease: JobLease): ReadStore {
  return {
    register: (defs) => store.register(defs),
    get: (def, id) => store.get(def, id),
    getMany: (def, ids) => store.getMany(def, ids),
    find: (def, filter, options) => store.find(def, filter, options),
    count: (def, filter) => store.count(def, filter),
    scan: (def, batchSize) => store.scan(def, batchSize),
    snapshot: () => store.snapshot(),
    async commit(batch) {
      // A batch of checkpoints alone (the projector had nothing to write for those events) is the
      // same whoever commits it, and a checkpoint never moves back: it needs no lease read. Most of
      // a worker's commits under metered load are these (debits pass every score projection).
      if (batch.writes.length > 0) await lease.check();
      await store.commit(batch);
    },
    checkpoint: (projector) => store.checkpoint(projector),
    ...(store.checkpoints && { checkpoints: (projectors: readonly string[]) => store.checkpoints!(projectors) }),
    async reset(collections, projectors) {
      await lease.check();
      await store.reset(collections, projectors);
    },
    // The job does not own the store: closing it is the composition's.
    close: async () => undefined,
  };
}
