import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
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

async function demoState(store: EventStore): Promise<{ through: string | null; revision: number | 'no_stream' }> {
  const history = (await store.readStream(DEMO_STREAM)) as unknown as (DemoPublishedThrough & { revision: number })[];
  const last = history[history.length - 1];
  return last ? { through: last.data.through, revision: last.revision } : { through: null, revision: 'no_stream' };
}

/** Splits appends into chunks that never separate two appends of the same instant. */
function* chunks(appends: DemoAppend[], target: number): Generator<DemoAppend[]> {
  let start = 0;
  while (start < appends.length) {
    let end = Math.min(start + target, appends.length);
    while (end < appends.length && appends[end]!.at === appends[end - 1]!.at) end++;
    yield appends.slice(start, end);
    start = end;
  }
}

/**
 * Writes the demo's publication history up to the clock's now: everything whose time lies after
 * the last `DemoPublishedThrough` marker. Each chunk is appended together with the next marker,
 * guarded by the marker stream's revision, so a crash or a second writer neither loses nor
 * doubles an event (on the embedded store a chunk is one transaction).
 */
export async function advanceDemo(deps: {
  store: EventStore;
  clock: Clock;
  dataset: DemoDataset;
  chunkSize?: number;
  onProgress?: (done: number, total: number) => void;
}): Promise<AdvanceResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await advanceOnce(deps);
    } catch (err) {
      if (err instanceof ConcurrencyError && err.streamId === DEMO_STREAM && attempt < 5) continue;
      throw err;
    }
  }
}

async function advanceOnce(deps: Parameters<typeof advanceDemo>[0]): Promise<AdvanceResult> {
  const { store, clock, dataset } = deps;
  let { through, revision } = await demoState(store);
  const pending = dataset.appendsBetween(through ? new Date(through) : null, clock.now());
  let done = 0;
  let events = 0;
  deps.onProgress?.(0, pending.length);
  for (const chunk of chunks(pending, deps.chunkSize ?? 60)) {
    const last = chunk[chunk.length - 1]!.at;
    const appends: StreamAppend[] = chunk.map((a) => ({ streamId: a.streamId, events: a.events, expectedRevision: 'any' }));
    appends.push({
      streamId: DEMO_STREAM,
      events: [{ type: 'DemoPublishedThrough', data: { through: last, appends: chunk.length } satisfies DemoPublishedThrough['data'] }],
      expectedRevision: revision,
    });
    const results = await store.appendMany(appends);
    revision = results[results.length - 1]!.nextExpectedRevision;
    through = last;
    done += chunk.length;
    events += chunk.reduce((n, a) => n + a.events.length, 0);
    deps.onProgress?.(done, pending.length);
  }
  return { appends: done, events, through };
}

/** Keeps a long-running demo current: appends each new trading day once the clock passes it. */
export function startDemoPublisher(
  deps: Parameters<typeof advanceDemo>[0] & { intervalMs?: number; onError?: (err: unknown) => void },
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => advanceDemo(deps)).catch((err) => deps.onError?.(err));
  }, deps.intervalMs ?? 60_000);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
