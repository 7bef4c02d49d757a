/**
 * An EventStore whose every write is a fenced write of a job's lease (JobLease.append): a job
 * started with it needs no change to be fenced, and an owner that lost its lease while paused
 * writes nothing (LeaseLostError). Reads and subscriptions go to the store as they are.
 */
import type { AppendResult, EventStore, ExpectedRevision, NewEvent, StreamAppend } from './event-store.port.js';
import type { JobLease } from './lease.js';

export function fencedEventStore(store: EventStore, lease: JobLease): EventStore {
  return {
    async append(streamId: string, events: NewEvent[], expectedRevision?: ExpectedRevision): Promise<AppendResult> {
      const [written] = await lease.append([{ streamId, events, expectedRevision }]);
      return written!;
    },
    appendMany: (appends: StreamAppend[]) => lease.append(appends),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    // The job does not own the store: closing it is the composition's.
    close: async () => undefined,
  };
}
