import type { Clock } from '../../src/core/clock.js';
import { ConcurrencyError } from '../../src/core/errors.js';
import type { EventStore, StreamAppend } from '../../src/core/event-store.port.js';
import { TICKERS_STREAM, type TickerListed } from '../../src/events/reference-events.js';
import { planIngest } from './ingest.decider.js';
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
 * Writes a validated batch: every stream it touches is read, folded and decided, then all
 * changes are appended in one `appendMany` with each stream's expected revision. Identical rows
 * write nothing; changed score values become a restatement. A concurrent writer makes the whole
 * batch decide again.
 */
export async function ingestRows(store: EventStore, clock: Clock, rows: IngestRow[]): Promise<IngestResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ingestOnce(store, clock, rows);
    } catch (err) {
      if (err instanceof ConcurrencyError && attempt < 5) continue;
      throw err;
    }
  }
}

async function ingestOnce(store: EventStore, clock: Clock, rows: IngestRow[]): Promise<IngestResult> {
  const listed = new Set(
    ((await store.readStream(TICKERS_STREAM)) as unknown as TickerListed[]).map((e) => e.data.symbol),
  );
  const now = clock.now().toISOString();
  const plan = planIngest(rows, listed, now);
  if (plan.errors.length) throw new IngestValidationError(plan.errors.sort((a, b) => a.line - b.line));
  const appends: StreamAppend[] = [];
  let written = 0;
  let unchanged = 0;
  for (const d of plan.decisions) {
    const history = await store.readStream(d.streamId);
    const outcome = d.decide(history, now);
    written += outcome.written;
    unchanged += outcome.unchanged;
    if (outcome.events.length) {
      const last = history[history.length - 1];
      appends.push({ streamId: d.streamId, events: outcome.events, expectedRevision: last ? last.revision : 'no_stream' });
    }
  }
  const results = appends.length ? await store.appendMany(appends) : [];
  return {
    rows: rows.length,
    written,
    unchanged,
    events: appends.reduce((n, a) => n + a.events.length, 0),
    streams: appends.length,
    position: results.reduce<string | null>((max, r) => (max === null || r.position > max ? r.position : max), null),
  };
}
