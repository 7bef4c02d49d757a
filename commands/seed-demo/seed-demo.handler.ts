import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand, type Folded, type Stream } from '../../src/core/command-handler.js';
import type { EventStore, StreamAppend } from '../../src/core/event-store.port.js';
import type { DemoAppend, DemoDataset } from './dataset/generate.js';

/** Marks how far the demo's publication history has been written (stream `demo`). */
export interface DemoPublishedThrough {
  type: 'DemoPublishedThrough';
  data: { through: string; appends: number };
}
export const DEMO_STREAM = 'demo';

export interface AdvanceResult {
  appends: number;
  events: number;
  through: string | null;
}

/** The demo stream folds to the instant its last marker says was written through. */
const demoStream: Stream<string | null, DemoPublishedThrough> = {
  streamId: DEMO_STREAM,
  initialState: () => null,
  evolve: (_, marker) => marker.data.through,
};

/** Where the chunk starting at `start` ends: about `target` appends, never between two of one instant. */
function chunkEnd(appends: DemoAppend[], start: number, target: number): number {
  let end = Math.min(start + target, appends.length);
  while (end < appends.length && appends[end]!.at === appends[end - 1]!.at) end++;
  return end;
}

export interface AdvanceDeps {
  store: EventStore;
  clock: Clock;
  dataset: DemoDataset;
  chunkSize?: number;
  onProgress?: (done: number, total: number) => void;
}

/**
 * Writes the demo's publication history up to the clock's now: everything whose time lies after
 * the last `DemoPublishedThrough` marker. Each chunk is one command: appended together with the
 * next marker, guarded by the marker stream's revision, so a crash or a second writer neither
 * loses nor doubles an event (on the embedded store a chunk is one transaction).
 */
export async function advanceDemo(deps: AdvanceDeps): Promise<AdvanceResult> {
  const { store, dataset } = deps;
  const now = deps.clock.now();
  // The marker as last read or written, so a chunk does not read the stream again; and what is
  // due after it, simulated once and not again for every chunk.
  let marker: Folded<string | null> | undefined;
  const demo = { ...demoStream, load: async (fresh: boolean) => (marker = !fresh && marker ? marker : await foldStream(store, demoStream, marker)) };
  let due: { after: string | null | undefined; appends: DemoAppend[]; next: number } = { after: undefined, appends: [], next: 0 };
  let total: number | undefined;
  let done = 0;
  let events = 0;
  for (;;) {
    const { result: chunk, written } = await handleCommand(store, demo, (through) => {
      if (due.after !== through) due = { after: through, appends: dataset.appendsBetween(through ? new Date(through) : null, now), next: 0 };
      if (total === undefined) deps.onProgress?.(0, (total = due.appends.length));
      const chunk = due.appends.slice(due.next, chunkEnd(due.appends, due.next, deps.chunkSize ?? 60));
      const writes: StreamAppend[] = chunk.map((a) => ({ streamId: a.streamId, events: a.events, expectedRevision: 'any' }));
      if (chunk.length) {
        const data: DemoPublishedThrough['data'] = { through: chunk[chunk.length - 1]!.at, appends: chunk.length };
        writes.push({ streamId: DEMO_STREAM, events: [{ type: 'DemoPublishedThrough', data }] });
      }
      return { writes, result: chunk };
    });
    if (chunk.length === 0) return { appends: done, events, through: marker?.state ?? null };
    const { nextExpectedRevision, position } = written[written.length - 1]!;
    marker = { state: chunk[chunk.length - 1]!.at, revision: nextExpectedRevision, position };
    due = { after: marker.state, appends: due.appends, next: due.next + chunk.length };
    done += chunk.length;
    events += chunk.reduce((n, a) => n + a.events.length, 0);
    deps.onProgress?.(done, total ?? done);
  }
}
