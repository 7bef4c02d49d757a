/**
 * An ingest batch from validated rows: checks them against each other and the listed tickers, and
 * groups them by the stream they change (src/domain/scores/ingest.decider.ts decides on them).
 */
import type { IngestBatch, StreamRows } from '../../src/domain/scores/ingest.decider.js';
import { EARNINGS_STREAM, SIGNALS_STREAM, TICKERS_STREAM, pricesStream, themeStream, visitsStream } from '../../src/domain/scores/reference.events.js';
import { scoreStream } from '../../src/domain/scores/score.events.js';
import type { RowError } from './ingest.parser.js';
import type { IngestRow } from './ingest.schema.js';

/** A stream of the batch, before its rows. */
type StreamOf<S = StreamRows> = S extends StreamRows ? Omit<S, 'rows'> : never;

/** The stream a row changes, the row as that stream takes it, and what names it among the stream's rows. */
function placeOf(r: IngestRow): { stream: StreamOf; row: StreamRows['rows'][number]; key: string } {
  switch (r.kind) {
    case 'score': {
      const { ticker, date, main_street, wall_street, estimated, published_at } = r.value;
      const row = published_at === undefined ? { ticker, main_street, wall_street, estimated } : { ticker, main_street, wall_street, estimated, published_at };
      return { stream: { kind: 'score', streamId: scoreStream(date), date }, row, key: ticker };
    }
    case 'price':
      return { stream: { kind: 'price', streamId: pricesStream(r.value.date), date: r.value.date }, row: { ticker: r.value.ticker, close: r.value.close }, key: r.value.ticker };
    case 'visits':
      return { stream: { kind: 'visits', streamId: visitsStream(r.value.date), date: r.value.date }, row: { ticker: r.value.ticker, visits: r.value.visits }, key: r.value.ticker };
    case 'earnings':
      return { stream: { kind: 'earnings', streamId: EARNINGS_STREAM }, row: r.value, key: `${r.value.ticker} ${r.value.date}` };
    case 'ticker':
      return { stream: { kind: 'ticker', streamId: TICKERS_STREAM }, row: r.value, key: r.value.symbol };
    case 'theme':
      return { stream: { kind: 'theme', streamId: themeStream(r.value.slug) }, row: r.value, key: r.value.slug };
    case 'signal':
      return { stream: { kind: 'signal', streamId: SIGNALS_STREAM }, row: r.value, key: String(r.value.id) };
    default: {
      const _exhaustive: never = r;
      return _exhaustive;
    }
  }
}

/** Why a row is refused before anything is decided: a ticker nobody listed, a score published after the clock. */
function refusal(r: IngestRow, listed: ReadonlySet<string>, now: string | undefined): string | null {
  if (r.kind !== 'score' && r.kind !== 'price' && r.kind !== 'visits' && r.kind !== 'earnings') return null;
  if (!listed.has(r.value.ticker)) return `ticker ${r.value.ticker} is not listed (ingest it as a ticker row first)`;
  // A row published after the clock would be served before its time (docs/operations.md: a day
  // whose publication time is still in the future is not visible yet).
  if (r.kind === 'score' && now !== undefined && r.value.published_at !== undefined && r.value.published_at > now) {
    return `published_at ${r.value.published_at} is after the clock (${now}): a row cannot be published in the future`;
  }
  return null;
}

/** The tickers a batch's rows need listed. */
export function tickersNamed(rows: readonly IngestRow[]): Set<string> {
  const named = new Set<string>();
  for (const r of rows) if (r.kind === 'score' || r.kind === 'price' || r.kind === 'visits' || r.kind === 'earnings') named.add(r.value.ticker);
  return named;
}

/**
 * The batch of `rows`, one entry per stream in first-seen order, and the errors: refused rows and
 * rows repeating an earlier one of the batch (nothing of the batch is written when there is one).
 */
export function batchOf(rows: readonly IngestRow[], knownTickers: ReadonlySet<string>, now?: string): { batch: IngestBatch; errors: RowError[] } {
  const errors: RowError[] = [];
  const listed = new Set(knownTickers);
  for (const r of rows) if (r.kind === 'ticker') listed.add(r.value.symbol);
  const streams = new Map<string, { entry: StreamRows; lines: Map<string, number> }>();
  for (const r of rows) {
    const reason = refusal(r, listed, now);
    if (reason !== null) {
      errors.push({ line: r.line, reason });
      continue;
    }
    const { stream, row, key } = placeOf(r);
    let group = streams.get(stream.streamId);
    if (!group) streams.set(stream.streamId, (group = { entry: { ...stream, rows: [] } as StreamRows, lines: new Map() }));
    const first = group.lines.get(key);
    if (first !== undefined) {
      errors.push({ line: r.line, reason: `duplicates line ${first} (${r.kind} ${key}${'date' in stream ? ` ${stream.date}` : ''})` });
      continue;
    }
    group.lines.set(key, r.line);
    (group.entry.rows as unknown[]).push(row);
  }
  return { batch: { type: 'IngestBatch', streams: [...streams.values()].map((g) => g.entry) }, errors };
}
