import type { Clock } from '../../src/core/clock.js';
import { handleCommand } from '../../src/core/command-handler.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import { TICKERS_STREAM, type TickerListed } from '../../src/domain/scores/reference.events.js';
import { planIngest } from './ingest.planner.js';
import { IngestValidationError } from './ingest.parser.js';
import type { IngestRow } from './ingest.schema.js';

export interface IngestResult {
  rows: number;
  written: number;
  unchanged: number;
  events: number;
  streams: number;
  /** Global position of the last event written (null when nothing changed). */
  position: string | null;
}

/**
 * Writes a validated batch: every stream it touches is read and decided, then all changes are
 * appended in one `appendMany` with each stream's expected revision. Identical rows write
 * nothing; changed score values become a restatement. A concurrent writer makes the whole batch
 * decide again.
 */
export async function ingestRows(store: EventStore, clock: Clock, rows: IngestRow[]): Promise<IngestResult> {
  // Listings are never withdrawn: a plan that passes on this read passes on any later one.
  const listed = new Set(
    ((await store.readStream(TICKERS_STREAM)) as unknown as TickerListed[]).map((e) => e.data.symbol),
  );
  const now = clock.now().toISOString();
  const plan = planIngest(rows, listed, now);
  if (plan.errors.length) throw new IngestValidationError(plan.errors.sort((a, b) => a.line - b.line));
  // An ingest decision folds a stream's history itself.
  const histories = plan.decisions.map((d) => ({
    streamId: d.streamId,
    initialState: (): RecordedEvent[] => [],
    evolve: (history: RecordedEvent[], e: RecordedEvent) => (history.push(e), history),
  }));
  const { result, written: appended } = await handleCommand(store, histories, (states) => {
    const counts = { written: 0, unchanged: 0 };
    const writes = plan.decisions.map((d, i) => {
      const outcome = d.decide(states[i]!, now);
      counts.written += outcome.written;
      counts.unchanged += outcome.unchanged;
      return { streamId: d.streamId, events: outcome.events };
    });
    return { writes, result: counts };
  });
  return {
    rows: rows.length,
    ...result,
    events: appended.reduce((n, a) => n + a.events.length, 0),
    streams: appended.length,
    position: appended.reduce<string | null>((max, r) => (max === null || r.position > max ? r.position : max), null),
  };
}
