import type { Clock } from '../../src/core/clock.js';
import { handleCommand, type StreamsSource } from '../../src/core/command-handler.js';
import type { EventStore, StreamAppend } from '../../src/core/event-store.port.js';
import { ingestDecider, type IngestEvent, type IngestState } from '../../src/domain/scores/ingest.decider.js';
import { TICKERS_STREAM } from '../../src/domain/scores/reference.events.js';
import { batchOf, tickersNamed } from './ingest-batch.js';
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

/** Streams whose values are kept between batches (the newest used; the listings always). */
const KEPT_STREAMS = 64;

/**
 * The values of the streams ingest decides on, kept between batches with the revision each was
 * folded to, so a batch reads only what its streams gained since (by anyone): the consumer of
 * the ingest topic decides each message in the time its row takes, not its day's history.
 */
export class IngestStreams {
  private readonly state: IngestState = ingestDecider.initialState();
  private readonly revisions = new Map<string, number>();

  constructor(private readonly store: EventStore) {}

  /** The listed tickers, read further only when `needed` names one not listed yet (a listing is never withdrawn). */
  async listed(needed: ReadonlySet<string>): Promise<ReadonlySet<string>> {
    const known = () => (this.state.get(TICKERS_STREAM) ?? new Map<string, unknown>()) as ReadonlyMap<string, unknown>;
    for (const t of needed) if (!known().has(t)) return new Set((await this.load([TICKERS_STREAM])).state.get(TICKERS_STREAM)?.keys());
    return new Set(known().keys());
  }

  /** The batch's streams, each read from the revision it was folded to. */
  async load(streamIds: readonly string[]): Promise<{ state: IngestState; revisions: number[] }> {
    const revisions: number[] = [];
    for (const id of streamIds) {
      const from = this.revisions.get(id) ?? -1;
      const events = await this.store.readStream(id, { fromRevision: from + 1 });
      for (const e of events) ingestDecider.evolve(this.state, e as unknown as IngestEvent);
      const revision = events.length ? events[events.length - 1]!.revision : from;
      this.touch(id, revision);
      revisions.push(revision);
    }
    this.forgetBeyond(streamIds);
    return { state: this.state, revisions };
  }

  /** What a batch appended, folded in: the next batch reads from there. */
  appended(written: readonly (StreamAppend & { nextExpectedRevision: number })[]): void {
    for (const { streamId, events, nextExpectedRevision } of written) {
      for (const e of events) ingestDecider.evolve(this.state, { type: e.type, data: e.data, streamId } as IngestEvent);
      this.touch(streamId, nextExpectedRevision);
    }
  }

  private touch(id: string, revision: number): void {
    this.revisions.delete(id);
    this.revisions.set(id, revision);
    if (!this.state.has(id)) this.state.set(id, new Map());
  }

  /** Drops the least recently used streams beyond KEPT_STREAMS (never the batch's own, nor the listings). */
  private forgetBeyond(inUse: readonly string[]): void {
    if (this.revisions.size <= KEPT_STREAMS) return;
    const kept = new Set(inUse).add(TICKERS_STREAM);
    for (const id of this.revisions.keys()) {
      if (this.revisions.size <= KEPT_STREAMS) return;
      if (kept.has(id)) continue;
      this.revisions.delete(id);
      this.state.delete(id);
    }
  }
}

/**
 * Writes a validated batch: every stream it touches is decided on (src/domain/scores/ingest.decider.ts),
 * then all changes are appended in one `appendMany` with each stream's expected revision.
 * Identical rows write nothing; changed score values become a restatement. A concurrent writer
 * makes the whole batch decide again. `streams` keeps what was read for the next batch (the
 * ingest consumer passes one for its life; a single batch reads its streams once).
 */
export async function ingestRows(store: EventStore, clock: Clock, rows: IngestRow[], streams = new IngestStreams(store)): Promise<IngestResult> {
  const listed = await streams.listed(tickersNamed(rows));
  const { batch, errors } = batchOf(rows, listed, clock.now().toISOString());
  if (errors.length) throw new IngestValidationError(errors.sort((a, b) => a.line - b.line));
  const source: StreamsSource<IngestState> = { streamIds: batch.streams.map((s) => s.streamId), load: () => streams.load(source.streamIds) };
  const { result, written } = await handleCommand(store, ingestDecider, source, batch, clock);
  streams.appended(written);
  return {
    rows: rows.length,
    written: result!.written,
    unchanged: result!.unchanged,
    events: written.reduce((n, a) => n + a.events.length, 0),
    streams: written.length,
    position: written.reduce<string | null>((max, r) => (max === null || r.position > max ? r.position : max), null),
  };
}
