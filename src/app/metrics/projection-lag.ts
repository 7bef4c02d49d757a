import type { Clock } from '../../core/clock.js';
import type { EventStore } from '../../core/event-store.port.js';
import { checkpointsOf, type ReadStore } from '../../core/read-store.port.js';

export interface ProjectionLag {
  projection: string;
  /** The position of the last event the projection applied (null: none yet). */
  checkpoint: string | null;
  /** Events in the log after the checkpoint; counted up to `cap` where positions are not event numbers. */
  events: number;
  /** How long the oldest event not yet applied has been in the log (0 when caught up); null when not asked. */
  seconds: number | null;
}

export interface LagSources {
  events: Pick<EventStore, 'headPosition' | 'readAll'>;
  reads: Pick<ReadStore, 'checkpoint' | 'checkpoints'>;
  clock: Clock;
  /** The projections' names (their checkpoints' names). */
  projections: readonly string[];
}

/** Plain decimal positions number the events (the embedded store: 1, 2, 3…, zero-padded). */
const EVENT_NUMBER = /^\d+$/;

/**
 * How far each projection's checkpoint is behind the head of the log, read from the stores (so it
 * is the state the read models are in, not what this process believes). Throws when the log or
 * the read store cannot be read. Projections at the same checkpoint (all of them, once a batch is
 * committed) share one look at the log.
 */
export async function projectionLags(
  sources: LagSources,
  options: { cap: number; seconds: boolean },
): Promise<{ head: string | null; lags: ProjectionLag[] }> {
  const head = await sources.events.headPosition();
  const checkpoints = await checkpointsOf(sources.reads, sources.projections);
  const behind = new Map<string | null, Promise<{ events: number; seconds: number | null }>>();
  const lagOf = (checkpoint: string | null) => {
    let lag = behind.get(checkpoint);
    if (!lag) behind.set(checkpoint, (lag = measure(sources, head, checkpoint, options)));
    return lag;
  };
  const lags = await Promise.all(
    sources.projections.map(async (projection, i) => ({ projection, checkpoint: checkpoints[i] ?? null, ...(await lagOf(checkpoints[i] ?? null)) })),
  );
  return { head, lags };
}

async function measure(
  sources: LagSources,
  head: string | null,
  checkpoint: string | null,
  options: { cap: number; seconds: boolean },
): Promise<{ events: number; seconds: number | null }> {
  if (head === null || (checkpoint !== null && checkpoint >= head)) return { events: 0, seconds: options.seconds ? 0 : null };
  let events: number;
  if (EVENT_NUMBER.test(head) && (checkpoint === null || EVENT_NUMBER.test(checkpoint))) {
    events = Number(head) - Number(checkpoint ?? 0);
  } else {
    // Positions that are not event numbers (EventStoreDB's commit:prepare): count, up to the cap.
    events = (await sources.events.readAll({ after: checkpoint, maxCount: options.cap })).length;
  }
  if (!options.seconds) return { events, seconds: null };
  const [oldest] = await sources.events.readAll({ after: checkpoint, maxCount: 1 });
  const seconds = oldest ? Math.max(0, (sources.clock.now().getTime() - Date.parse(oldest.recordedAt)) / 1000) : 0;
  return { events, seconds };
}
