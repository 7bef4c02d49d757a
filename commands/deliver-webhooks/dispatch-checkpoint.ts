/**
 * The dispatcher's checkpoint: the position of the last event it decided on, kept in the read
 * store (`webhook_dispatch`, one document). Not a projection's: a replay of the read models keeps
 * it, so a replay sends nothing again.
 */
import { defineCollection, type ReadStore } from '../../src/core/read-store.port.js';

/** The reactor's checkpoint: the last event it decided on (null: the beginning of the log). */
export interface WebhookDispatchCheckpoint {
  id: 'dispatch';
  position: string | null;
}

export const webhookDispatchCheckpoint = defineCollection<WebhookDispatchCheckpoint>({
  name: 'webhook_dispatch',
  key: (d) => d.id,
  fields: [],
  indexes: [],
});

const CHECKPOINT_ID = 'dispatch';
/** Events decided on without anything to send before the checkpoint is saved anyway. */
const SAVE_EVERY = 1_000;

export class DispatchCheckpoint {
  /** The last event decided on. */
  position: string | null = null;
  private saved: string | null = null;
  private unsaved = 0;

  constructor(private readonly reads: ReadStore) {}

  /** The stored position, or undefined on the very first start (no document). */
  static async stored(reads: ReadStore): Promise<{ position: string | null } | undefined> {
    await reads.register([webhookDispatchCheckpoint]);
    return (await reads.get(webhookDispatchCheckpoint, CHECKPOINT_ID)) ?? undefined;
  }

  /** Resumes from the stored position. */
  resume(position: string | null): void {
    this.position = this.saved = position;
  }

  /** Starts at `position`, saved at once: a crash before the first decision must not move the start later. */
  async begin(position: string | null): Promise<void> {
    this.position = position;
    this.saved = null;
    this.unsaved = 1;
    await this.save();
  }

  /** Decided on `count` events up to `position`; saved when `sent` (something was owed) or every 1,000 events. */
  async advance(position: string, count: number, sent: boolean): Promise<void> {
    this.position = position;
    this.unsaved += count;
    if (sent || this.unsaved >= SAVE_EVERY) await this.save();
  }

  async save(): Promise<void> {
    if (this.unsaved === 0 && this.saved === this.position) return;
    const doc: WebhookDispatchCheckpoint = { id: CHECKPOINT_ID, position: this.position };
    await this.reads.commit({ writes: [{ op: 'upsert', collection: webhookDispatchCheckpoint.name, id: CHECKPOINT_ID, doc }], checkpoints: {} });
    this.saved = this.position;
    this.unsaved = 0;
  }
}
