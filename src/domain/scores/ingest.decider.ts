/**
 * What an ingest batch changes (commands/ingest): scores and reference data, decided on every
 * stream the batch touches, in one atomic append. A row equal to what its stream holds writes
 * nothing; a new score is published (at its `published_at`, else now), a changed one restated
 * now; reference rows are recorded when new or changed.
 *
 * A stream's state is its current values by key (a ticker, a symbol, a slug, a signal id), never
 * its history: a batch is decided in the time its rows take, and the handler keeps the states
 * between batches, folding only what was appended since.
 */
import type { Decider, Decision, StreamWrite } from '../../core/decider.js';
import type { NewEvent } from '../../core/event-store.port.js';
import { compositeScore } from '../composite.js';
import type { ReferenceEvent, SignalPublished, ThemeDefined, TickerListed } from './reference.events.js';
import type { ScoreEvent, ScoreValues } from './score.events.js';

/** A score row as ingested: its values (the composite is computed here) and when it was first published. */
export interface ScoreRow {
  ticker: string;
  main_street: number;
  wall_street: number;
  estimated: boolean;
  published_at?: string;
}

/** The rows of one batch for one stream. */
export type StreamRows =
  | { kind: 'score'; streamId: string; date: string; rows: ScoreRow[] }
  | { kind: 'price'; streamId: string; date: string; rows: { ticker: string; close: number }[] }
  | { kind: 'visits'; streamId: string; date: string; rows: { ticker: string; visits: number }[] }
  | { kind: 'earnings'; streamId: string; rows: { ticker: string; date: string }[] }
  | { kind: 'ticker'; streamId: string; rows: TickerListed['data'][] }
  | { kind: 'theme'; streamId: string; rows: ThemeDefined['data'][] }
  | { kind: 'signal'; streamId: string; rows: SignalPublished['data'][] };

export interface IngestBatch {
  type: 'IngestBatch';
  streams: StreamRows[];
}

/** One stream's current values: by ticker (scores, closes, visits, earnings dates), symbol, slug or signal id. */
export type StreamValues = Map<string, unknown>;
/** The values of each stream folded so far, by stream id. */
export type IngestState = Map<string, StreamValues>;
export type IngestEvent = (ScoreEvent | ReferenceEvent) & { streamId?: string };

export interface IngestCounts {
  written: number;
  unchanged: number;
}

/** Folds one event into its stream's values, in place: a stream's values only ever move forward. */
export function applyEvent(values: StreamValues, e: ScoreEvent | ReferenceEvent): void {
  switch (e.type) {
    case 'ScoresPublished':
    case 'ScoresRestated':
      for (const r of e.data.rows) values.set(r.ticker, r);
      return;
    case 'ClosePricesRecorded':
      for (const c of e.data.closes) values.set(c.ticker, c.close);
      return;
    case 'WebVisitsRecorded':
      for (const v of e.data.visits) values.set(v.ticker, v.visits);
      return;
    case 'EarningsDatesScheduled':
      for (const r of e.data.rows) {
        const dates = (values.get(r.ticker) as Set<string> | undefined) ?? new Set<string>();
        values.set(r.ticker, dates.add(r.date));
      }
      return;
    case 'TickerListed':
      values.set(e.data.symbol, e.data);
      return;
    case 'ThemeDefined':
      values.set(e.data.slug, e.data);
      return;
    case 'SignalPublished':
      values.set(String(e.data.id), e.data);
      return;
    default:
      return;
  }
}

const sameScore = (a: ScoreValues, b: ScoreValues) =>
  a.main_street === b.main_street && a.wall_street === b.wall_street && a.estimated === b.estimated && a.service_score === b.service_score;
const json = (x: unknown) => JSON.stringify(x);

function scoreEvents(values: StreamValues, date: string, rows: ScoreRow[], now: string): { events: NewEvent[]; unchanged: number } {
  const fresh = new Map<string, ScoreValues[]>(); // published_at → rows
  const restated: ScoreValues[] = [];
  let unchanged = 0;
  for (const r of rows) {
    const v: ScoreValues = { ticker: r.ticker, main_street: r.main_street, wall_street: r.wall_street, service_score: compositeScore(r.main_street, r.wall_street), estimated: r.estimated };
    const prev = values.get(v.ticker) as ScoreValues | undefined;
    if (!prev) {
      const at = r.published_at ?? now;
      const list = fresh.get(at);
      if (list) list.push(v);
      else fresh.set(at, [v]);
    } else if (sameScore(prev, v)) unchanged++;
    else restated.push(v);
  }
  const events: NewEvent[] = [];
  for (const [published_at, list] of fresh) events.push({ type: 'ScoresPublished', data: { date, published_at, rows: list } satisfies ScoreEvent['data'] });
  if (restated.length) events.push({ type: 'ScoresRestated', data: { date, restated_at: now, rows: restated } });
  return { events, unchanged };
}

/** The rows that change the stream (new or different), and the events recording them. */
function referenceEvents(values: StreamValues, s: Exclude<StreamRows, { kind: 'score' }>): { events: NewEvent[]; unchanged: number } {
  switch (s.kind) {
    case 'price': {
      const changed = s.rows.filter((r) => values.get(r.ticker) !== r.close);
      return { events: changed.length ? [{ type: 'ClosePricesRecorded', data: { date: s.date, closes: changed.map((r) => ({ ticker: r.ticker, close: r.close })) } }] : [], unchanged: s.rows.length - changed.length };
    }
    case 'visits': {
      const changed = s.rows.filter((r) => values.get(r.ticker) !== r.visits);
      return { events: changed.length ? [{ type: 'WebVisitsRecorded', data: { date: s.date, visits: changed.map((r) => ({ ticker: r.ticker, visits: r.visits })) } }] : [], unchanged: s.rows.length - changed.length };
    }
    case 'earnings': {
      const changed = s.rows.filter((r) => !(values.get(r.ticker) as Set<string> | undefined)?.has(r.date));
      return { events: changed.length ? [{ type: 'EarningsDatesScheduled', data: { rows: changed } }] : [], unchanged: s.rows.length - changed.length };
    }
    case 'ticker':
    case 'theme':
    case 'signal': {
      const keyOf = (r: (typeof s.rows)[number]) => ('symbol' in r ? r.symbol : 'slug' in r ? r.slug : String(r.id));
      const type = s.kind === 'ticker' ? 'TickerListed' : s.kind === 'theme' ? 'ThemeDefined' : 'SignalPublished';
      const changed = (s.rows as (typeof s.rows)[number][]).filter((r) => {
        const held = values.get(keyOf(r));
        return held === undefined || json(held) !== json(r);
      });
      return { events: changed.map((data) => ({ type, data })), unchanged: s.rows.length - changed.length };
    }
    default: {
      const _exhaustive: never = s;
      return _exhaustive;
    }
  }
}

function decide(state: IngestState, batch: IngestBatch, now: Date): Decision<IngestState, IngestEvent, IngestCounts> {
  const at = now.toISOString();
  const writes: StreamWrite[] = [];
  const counts: IngestCounts = { written: 0, unchanged: 0 };
  for (const s of batch.streams) {
    const values = state.get(s.streamId) ?? new Map<string, unknown>();
    const { events, unchanged } = s.kind === 'score' ? scoreEvents(values, s.date, s.rows, at) : referenceEvents(values, s);
    counts.written += s.rows.length - unchanged;
    counts.unchanged += unchanged;
    writes.push({ streamId: s.streamId, events });
  }
  return { events: [], writes, result: counts };
}

/**
 * Read on every stream of the batch (a recorded event names its stream); the events of each
 * stream go to it, at the revision it was read at.
 */
export const ingestDecider: Decider<IngestState, IngestBatch, IngestEvent, IngestCounts> = {
  initialState: () => new Map(),
  evolve(state, e) {
    const stream = e.streamId ?? '';
    let values = state.get(stream);
    if (!values) state.set(stream, (values = new Map<string, unknown>()));
    applyEvent(values, e);
    return state;
  },
  decide,
};
