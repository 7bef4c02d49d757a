/**
 * The demo's publication history, decided on the stream `demo`: each decision writes the next
 * chunk of what the dataset published after the last `DemoPublishedThrough` marker, up to the
 * command's instant, together with the next marker, so a crash or a second writer neither loses
 * nor doubles an event. Only the seed reads this stream, so its events and decider live here.
 */
import type { Decider } from '../../src/core/decider.js';
import type { DemoAppend, DemoDataset } from './dataset/generate.js';

/** Marks how far the demo's publication history has been written (stream `demo`). */
export interface DemoPublishedThrough {
  type: 'DemoPublishedThrough';
  data: { through: string; appends: number };
}
export const DEMO_STREAM = 'demo';

export interface PublishDemo {
  type: 'PublishDemo';
  dataset: DemoDataset;
  /** The history is written up to this instant (the clock's now when the seed began). */
  until: Date;
  /** About this many appends a decision (never splitting one instant). */
  chunkSize: number;
}

/** The chunk written, and how many appends are still due after it. */
export interface DemoChunk {
  chunk: DemoAppend[];
  remaining: number;
}

/** Where the chunk starting at `start` ends: about `target` appends, never between two of one instant. */
function chunkEnd(appends: DemoAppend[], start: number, target: number): number {
  let end = Math.min(start + target, appends.length);
  while (end < appends.length && appends[end]!.at === appends[end - 1]!.at) end++;
  return end;
}

/** The first append after `through` (appends are chronological). */
function firstAfter(appends: DemoAppend[], through: string | null): number {
  if (through === null) return 0;
  let lo = 0;
  let hi = appends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (appends[mid]!.at <= through) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * What is due after a marker, by dataset: simulated once and kept for the decisions that follow,
 * which only move the marker forward.
 */
const dueOf = new WeakMap<DemoDataset, { from: string | null; until: number; appends: DemoAppend[] }>();

function due(dataset: DemoDataset, through: string | null, until: Date): DemoAppend[] {
  const kept = dueOf.get(dataset);
  if (kept && kept.until === until.getTime() && (kept.from === null || (through !== null && through >= kept.from))) return kept.appends;
  const appends = dataset.appendsBetween(through ? new Date(through) : null, until);
  dueOf.set(dataset, { from: through, until: until.getTime(), appends });
  return appends;
}

export const demoPublicationDecider: Decider<string | null, PublishDemo, DemoPublishedThrough, DemoChunk> = {
  initialState: () => null,
  evolve: (_, marker) => marker.data.through,
  decide(through, { dataset, until, chunkSize }) {
    const appends = due(dataset, through, until);
    const start = firstAfter(appends, through);
    const end = chunkEnd(appends, start, chunkSize);
    const chunk = appends.slice(start, end);
    const result = { chunk, remaining: appends.length - end };
    if (chunk.length === 0) return { events: [], result };
    const writes = chunk.map((a) => ({ streamId: a.streamId, events: a.events, expectedRevision: 'any' as const }));
    return { events: [{ type: 'DemoPublishedThrough', data: { through: chunk[chunk.length - 1]!.at, appends: chunk.length } }], writes, result };
  },
};
