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
 * The decider over `dataset`. What is due after a marker is simulated once and kept for the
 * decisions that follow, which only move the marker forward.
 */
export function demoPublicationDecider(dataset: DemoDataset): Decider<string | null, PublishDemo, DemoPublishedThrough, DemoChunk> {
  let due: { from: string | null; until: number; appends: DemoAppend[] } | null = null;
  return {
    initialState: () => null,
    evolve: (_, marker) => marker.data.through,
    decide(through, { until, chunkSize }) {
      if (!due || due.until !== until.getTime() || (due.from !== null && (through === null || through < due.from))) {
        due = { from: through, until: until.getTime(), appends: dataset.appendsBetween(through ? new Date(through) : null, until) };
      }
      const start = firstAfter(due.appends, through);
      const end = chunkEnd(due.appends, start, chunkSize);
      const chunk = due.appends.slice(start, end);
      const result = { chunk, remaining: due.appends.length - end };
      if (chunk.length === 0) return { events: [], result };
      const writes = chunk.map((a) => ({ streamId: a.streamId, events: a.events, expectedRevision: 'any' as const }));
      return { events: [{ type: 'DemoPublishedThrough', data: { through: chunk[chunk.length - 1]!.at, appends: chunk.length } }], writes, result };
    },
  };
}
