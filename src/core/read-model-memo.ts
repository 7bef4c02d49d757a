import type { RecordedEvent } from './event-store.port.js';

interface Entry {
  types: ReadonlySet<string>;
  value: Promise<unknown>;
}

/**
 * Answers derived from the read models (a free endpoint's body: meta, the track record, the
 * coverage list), each built once and kept until the read models it was built from change: the
 * owner (the composition root) calls `invalidate(batch)` after every committed projector batch,
 * and an entry goes as soon as a batch holds one of the event types it depends on. So an answer
 * is built once per read-model position that matters to it, whatever the calls in between.
 *
 * Keyed by event type rather than by a projection's checkpoint: every batch moves every checkpoint
 * (each paid call's debit is an event), so a checkpoint key would be dropped by any other
 * customer's call. A build that overlaps an invalidation serves the calls that asked for it and is
 * not kept. A failed build is not kept either.
 */
export class ReadModelMemo {
  private readonly entries = new Map<string, Entry>();

  /** `maxEntries`: past it the memo starts over (the keys are few: one per as-of date and shape). */
  constructor(private readonly maxEntries = 256) {}

  /** The answer kept under `key`, else `build()`'s, kept until an event of `dependsOn` is projected. */
  get<T>(key: string, dependsOn: ReadonlySet<string>, build: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) return hit.value as Promise<T>;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    const entry: Entry = { types: dependsOn, value: build() };
    this.entries.set(key, entry);
    entry.value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return entry.value as Promise<T>;
  }

  /** Drops every answer that depends on an event type of this committed batch. */
  invalidate(batch: readonly RecordedEvent[]): void {
    if (this.entries.size === 0) return;
    const types = new Set(batch.map((e) => e.type));
    for (const [key, entry] of this.entries) {
      for (const t of entry.types) {
        if (types.has(t)) {
          this.entries.delete(key);
          break;
        }
      }
    }
  }

  /** Drops everything (the read models were reset or written outside the projector runner). */
  clear(): void {
    this.entries.clear();
  }
}

/** The event types of the projections that write what an answer reads. */
export function eventTypesOf(...projections: readonly { eventTypes: readonly string[] }[]): ReadonlySet<string> {
  return new Set(projections.flatMap((p) => p.eventTypes));
}
