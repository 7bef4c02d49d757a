/**
 * Read your own writes on any replica (docs/scaling.md, "Read your own writes on any replica"): a
 * private read first waits until the read model it reads holds the account's latest writes to the
 * streams behind it. The wait is on that one projection's checkpoint, never on the log head or on
 * every read model, so a read waits for its own account's writes and not for the metering load.
 */
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';

/** How long a read waits for its read model; past it, it answers with what the read model holds. */
export const READ_YOUR_WRITES_MS = 5_000;
/** How often the checkpoint is read while a read waits (only then: most reads find it passed at once). */
const POLL_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves once projection `projection`'s checkpoint has reached `position` (null: nothing to wait
 * for), or after `timeoutMs`: true when it was reached.
 */
export async function projectedUpTo(reads: Pick<ReadStore, 'checkpoint'>, projection: string, position: string | null, timeoutMs = READ_YOUR_WRITES_MS): Promise<boolean> {
  if (position === null) return true;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const at = await reads.checkpoint(projection);
    if (at !== null && at >= position) return true;
    if (performance.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
}

/**
 * The position of a stream's last event, read from `fromRevision` on (a revision the read model is
 * known to hold, so only its unprojected tail is read); null when the stream has none from there.
 */
export async function lastPositionFrom(events: Pick<EventStore, 'readStream'>, streamId: string, fromRevision = 0): Promise<string | null> {
  const tail = await events.readStream(streamId, { fromRevision });
  return tail[tail.length - 1]?.position ?? null;
}

/** The latest of several positions (null: none). */
export const latestOf = (positions: readonly (string | null)[]): string | null =>
  positions.reduce<string | null>((a, b) => (b !== null && (a === null || b > a) ? b : a), null);
