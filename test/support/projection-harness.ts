import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import type { CollectionDef } from '../../src/core/read-store.port.js';

/** Applies events to a projection over plain Maps: the unit-test twin of the runner. */
export class ProjectionHarness {
  readonly docs = new Map<string, Map<string, unknown>>();
  /** How many times each collection was written (upserts and deletes). */
  readonly writes = new Map<string, number>();
  private position = 0;
  private readonly revisions = new Map<string, number>();

  constructor(private readonly projection: Projection) {}

  private table(name: string) {
    let t = this.docs.get(name);
    if (!t) this.docs.set(name, (t = new Map()));
    return t;
  }

  readonly ctx: ProjectionContext = {
    get: async <T>(def: CollectionDef<T>, id: string) => (this.table(def.name).get(id) as T | undefined) ?? null,
    getMany: async <T>(def: CollectionDef<T>, ids: readonly string[]) => {
      const out = new Map<string, T>();
      for (const id of ids) {
        const d = this.table(def.name).get(id);
        if (d !== undefined) out.set(id, structuredClone(d) as T);
      }
      return out;
    },
    upsert: <T>(def: CollectionDef<T>, doc: T) => {
      this.wrote(def.name);
      this.table(def.name).set(def.key(doc), structuredClone(doc));
    },
    delete: <T>(def: CollectionDef<T>, id: string) => {
      this.wrote(def.name);
      this.table(def.name).delete(id);
    },
  };

  private wrote(collection: string): void {
    this.writes.set(collection, (this.writes.get(collection) ?? 0) + 1);
  }

  /** An event as the store records it: the next global position, and the next revision of its stream. */
  event(streamId: string, type: string, data: unknown): RecordedEvent {
    this.position += 1;
    const revision = (this.revisions.get(streamId) ?? -1) + 1;
    this.revisions.set(streamId, revision);
    return {
      id: `evt-${this.position}`,
      streamId,
      type,
      data,
      metadata: {},
      revision,
      position: String(this.position).padStart(20, '0'),
      recordedAt: '2024-01-01T00:00:00.000Z',
    };
  }

  async apply(...events: RecordedEvent[]): Promise<void> {
    for (const e of events) if (this.projection.eventTypes.includes(e.type)) await this.projection.apply(e, this.ctx);
  }

  /** Applies events as the runner applies a batch: at once when the projection has `applyBatch`. */
  async applyBatch(...events: RecordedEvent[]): Promise<void> {
    const mine = events.filter((e) => this.projection.eventTypes.includes(e.type));
    if (!this.projection.applyBatch) return this.apply(...mine);
    if (mine.length) await this.projection.applyBatch(mine, this.ctx);
  }

  snapshot(): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [name, t] of [...this.docs].sort(([a], [b]) => a.localeCompare(b))) {
      out[name] = Object.fromEntries([...t].sort(([a], [b]) => a.localeCompare(b)));
    }
    return structuredClone(out);
  }
}
