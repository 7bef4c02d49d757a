import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand, type Folded } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { DemoDataset } from './dataset/generate.js';
import { DEMO_STREAM, demoPublicationDecider } from './demo-publication.decider.js';

export { DEMO_STREAM, type DemoPublishedThrough } from './demo-publication.decider.js';

export interface AdvanceResult {
  appends: number;
  events: number;
  through: string | null;
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
  const { store } = deps;
  const command = { type: 'PublishDemo' as const, dataset: deps.dataset, until: deps.clock.now(), chunkSize: deps.chunkSize ?? 60 };
  const decider = demoPublicationDecider;
  // The marker as last read or written, so a chunk does not read the stream again.
  let marker: Folded<string | null> | undefined;
  const demo = { streamId: DEMO_STREAM, load: async (fresh: boolean) => (marker = !fresh && marker ? marker : await foldStream(store, decider, DEMO_STREAM, marker)) };
  let done = 0;
  let events = 0;
  for (let first = true; ; first = false) {
    const handled = await handleCommand(store, decider, demo, command, deps.clock);
    const { chunk, remaining } = handled.result!;
    if (first) deps.onProgress?.(0, chunk.length + remaining);
    if (chunk.length === 0) return { appends: done, events, through: handled.state };
    marker = { state: handled.state, revision: handled.revision, position: handled.position };
    done += chunk.length;
    events += chunk.reduce((n, a) => n + a.events.length, 0);
    deps.onProgress?.(done, done + remaining);
  }
}
