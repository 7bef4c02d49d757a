/**
 * Plans an ingest batch: checks its rows against each other and the listed tickers, groups them by
 * the stream they change, and gives each stream a decision that the handler takes on the stream's
 * history inside one atomic append (ingest.handler.ts). Planning, not a decider: the decisions it
 * returns are each one stream's "what changes", folded from raw history.
 */
import type { NewEvent, RecordedEvent } from '../../src/core/event-store.port.js';
import { compositeScore } from '../../src/domain/composite.js';
import {
  EARNINGS_STREAM,
  SIGNALS_STREAM,
  TICKERS_STREAM,
  pricesStream,
  themeStream,
  visitsStream,
  type ReferenceEvent,
} from '../../src/domain/scores/reference.events.js';
import { scoreStream, type ScoreEvent, type ScoreValues } from '../../src/domain/scores/score.events.js';
import type { RowError } from './ingest.parser.js';
import type { IngestRow } from './ingest.schema.js';

type RowOf<K extends IngestRow['kind']> = Extract<IngestRow, { kind: K }>;

/** How one stream's current state is folded and what a batch of rows changes in it. */
export interface StreamDecision {
  streamId: string;
  decide(history: RecordedEvent[], now: string): { events: NewEvent[]; written: number; unchanged: number };
}

export interface IngestPlan {
  decisions: StreamDecision[];
  errors: RowError[];
}

const sameScore = (a: ScoreValues, b: ScoreValues) =>
  a.main_street === b.main_street && a.wall_street === b.wall_street && a.estimated === b.estimated && a.service_score === b.service_score;

/** Current values of a score-date stream. */
export function foldScores(history: RecordedEvent[]): Map<string, ScoreValues> {
  const state = new Map<string, ScoreValues>();
  for (const e of history as unknown as ScoreEvent[]) for (const r of e.data.rows) state.set(r.ticker, r);
  return state;
}

function scoreDecision(date: string, rows: RowOf<'score'>[]): StreamDecision {
  return {
    streamId: scoreStream(date),
    decide(history, now) {
      const state = foldScores(history);
      const fresh = new Map<string, ScoreValues[]>(); // published_at → rows
      const restated: ScoreValues[] = [];
      let unchanged = 0;
      for (const { value } of rows) {
        const v: ScoreValues = {
          ticker: value.ticker,
          main_street: value.main_street,
          wall_street: value.wall_street,
          service_score: compositeScore(value.main_street, value.wall_street),
          estimated: value.estimated,
        };
        const prev = state.get(v.ticker);
        if (!prev) {
          const at = value.published_at ?? now;
          fresh.set(at, [...(fresh.get(at) ?? []), v]);
        } else if (sameScore(prev, v)) unchanged++;
        else restated.push(v);
      }
      const events: NewEvent[] = [];
      for (const [published_at, list] of fresh) {
        events.push({ type: 'ScoresPublished', data: { date, published_at, rows: list } satisfies ScoreEvent['data'] });
      }
      if (restated.length) events.push({ type: 'ScoresRestated', data: { date, restated_at: now, rows: restated } });
      return { events, written: rows.length - unchanged, unchanged };
    },
  };
}

function keyedDecision<R, S>(
  streamId: string,
  rows: R[],
  fold: (history: RecordedEvent[]) => Map<string, S>,
  key: (r: R) => string,
  same: (s: S, r: R) => boolean,
  toEvents: (changed: R[]) => NewEvent[],
): StreamDecision {
  return {
    streamId,
    decide(history) {
      const state = fold(history);
      const changed = rows.filter((r) => {
        const s = state.get(key(r));
        return s === undefined || !same(s, r);
      });
      return { events: changed.length ? toEvents(changed) : [], written: changed.length, unchanged: rows.length - changed.length };
    },
  };
}

const refEvents = (h: RecordedEvent[]) => h as unknown as ReferenceEvent[];
const json = (x: unknown) => JSON.stringify(x);

type GroupKey = string;

/**
 * The group (one stream's decision) of a row, or why the row is refused: a ticker nobody listed,
 * a score published after the clock. Duplicates are found by the caller.
 */
function groupOf(r: IngestRow, listed: ReadonlySet<string>, now: string | undefined): { group: GroupKey; key: string } | { reason: string } {
  switch (r.kind) {
    case 'score':
    case 'price':
    case 'visits':
    case 'earnings':
      if (!listed.has(r.value.ticker)) return { reason: `ticker ${r.value.ticker} is not listed (ingest it as a ticker row first)` };
      // A row published after the clock would be served before its time (docs/operations.md: a day
      // whose publication time is still in the future is not visible yet).
      if (r.kind === 'score' && now !== undefined && r.value.published_at !== undefined && r.value.published_at > now) {
        return { reason: `published_at ${r.value.published_at} is after the clock (${now}): a row cannot be published in the future` };
      }
      return { group: r.kind === 'earnings' ? 'earnings' : `${r.kind}\u0000${r.value.date}`, key: `${r.kind}\u0000${r.value.ticker}\u0000${r.value.date}` };
    case 'ticker':
      return { group: 'ticker', key: `ticker\u0000${r.value.symbol}` };
    case 'theme':
      return { group: `theme\u0000${r.value.slug}`, key: `theme\u0000${r.value.slug}` };
    case 'signal':
      return { group: 'signal', key: `signal\u0000${r.value.id}` };
    default: {
      const _exhaustive: never = r;
      return _exhaustive;
    }
  }
}

/** The rows by stream group, in first-seen order, and the errors (refused rows, duplicates inside the batch). */
function groupRows(rows: IngestRow[], knownTickers: ReadonlySet<string>, now: string | undefined): { groups: Map<GroupKey, IngestRow[]>; errors: RowError[] } {
  const errors: RowError[] = [];
  const seen = new Map<string, number>();
  const listed = new Set(knownTickers);
  for (const r of rows) if (r.kind === 'ticker') listed.add(r.value.symbol);
  const groups = new Map<GroupKey, IngestRow[]>();
  for (const r of rows) {
    const g = groupOf(r, listed, now);
    if ('reason' in g) {
      errors.push({ line: r.line, reason: g.reason });
      continue;
    }
    const first = seen.get(g.key);
    if (first !== undefined) {
      errors.push({ line: r.line, reason: `duplicates line ${first} (${g.key.split('\u0000').slice(1).join(' ')})` });
      continue;
    }
    seen.set(g.key, r.line);
    groups.set(g.group, [...(groups.get(g.group) ?? []), r]);
  }
  return { groups, errors };
}

/** The decision of one group's stream. */
function decisionOf(group: GroupKey, list: IngestRow[]): StreamDecision {
  const [kind, arg = ''] = group.split('\u0000') as [IngestRow['kind'] | 'earnings', string?];
  switch (kind) {
    case 'score':
      return scoreDecision(arg, list as RowOf<'score'>[]);
    case 'price':
      return keyedDecision(
        pricesStream(arg),
        (list as RowOf<'price'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'ClosePricesRecorded' ? e.data.closes.map((c) => [c.ticker, c.close] as const) : []))),
        (r) => r.ticker,
        (s, r) => s === r.close,
        (changed) => [{ type: 'ClosePricesRecorded', data: { date: arg, closes: changed.map((r) => ({ ticker: r.ticker, close: r.close })) } }],
      );
    case 'visits':
      return keyedDecision(
        visitsStream(arg),
        (list as RowOf<'visits'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'WebVisitsRecorded' ? e.data.visits.map((v) => [v.ticker, v.visits] as const) : []))),
        (r) => r.ticker,
        (s, r) => s === r.visits,
        (changed) => [{ type: 'WebVisitsRecorded', data: { date: arg, visits: changed.map((r) => ({ ticker: r.ticker, visits: r.visits })) } }],
      );
    case 'earnings':
      return keyedDecision(
        EARNINGS_STREAM,
        (list as RowOf<'earnings'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'EarningsDatesScheduled' ? e.data.rows.map((r) => [`${r.ticker}|${r.date}`, true] as const) : []))),
        (r) => `${r.ticker}|${r.date}`,
        () => true,
        (changed) => [{ type: 'EarningsDatesScheduled', data: { rows: changed } }],
      );
    case 'ticker':
      return keyedDecision(
        TICKERS_STREAM,
        (list as RowOf<'ticker'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'TickerListed' ? [[e.data.symbol, e.data] as const] : []))),
        (r) => r.symbol,
        (s, r) => json(s) === json(r),
        (changed) => changed.map((data) => ({ type: 'TickerListed', data })),
      );
    case 'theme':
      return keyedDecision(
        themeStream(arg),
        (list as RowOf<'theme'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'ThemeDefined' ? [[e.data.slug, e.data] as const] : []))),
        (r) => r.slug,
        (s, r) => json(s) === json(r),
        (changed) => changed.map((data) => ({ type: 'ThemeDefined', data })),
      );
    case 'signal':
      return keyedDecision(
        SIGNALS_STREAM,
        (list as RowOf<'signal'>[]).map((r) => r.value),
        (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'SignalPublished' ? [[String(e.data.id), e.data] as const] : []))),
        (r) => String(r.id),
        (s, r) => json(s) === json(r),
        (changed) => changed.map((data) => ({ type: 'SignalPublished', data })),
      );
  }
}

/**
 * Turns validated rows into one decision per stream. Duplicates inside a batch and scores for
 * tickers nobody listed are errors (nothing of the batch is written).
 */
export function planIngest(rows: IngestRow[], knownTickers: ReadonlySet<string>, now?: string): IngestPlan {
  const { groups, errors } = groupRows(rows, knownTickers, now);
  return { decisions: [...groups].map(([group, list]) => decisionOf(group, list)), errors };
}
