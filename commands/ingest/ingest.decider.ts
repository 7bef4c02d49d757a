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

/**
 * Turns validated rows into one decision per stream. Duplicates inside a batch and scores for
 * tickers nobody listed are errors (nothing of the batch is written).
 */
export function planIngest(rows: IngestRow[], knownTickers: ReadonlySet<string>, now?: string): IngestPlan {
  const errors: RowError[] = [];
  const seen = new Map<string, number>();
  const dup = (key: string, line: number) => {
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push({ line, reason: `duplicates line ${first} (${key.split('\u0000').slice(1).join(' ')})` });
      return true;
    }
    seen.set(key, line);
    return false;
  };
  const listed = new Set(knownTickers);
  for (const r of rows) if (r.kind === 'ticker') listed.add(r.value.symbol);
  const groups = new Map<string, IngestRow[]>();
  const add = (g: string, r: IngestRow) => groups.set(g, [...(groups.get(g) ?? []), r]);
  for (const r of rows) {
    switch (r.kind) {
      case 'score':
      case 'price':
      case 'visits':
      case 'earnings':
        if (!listed.has(r.value.ticker)) {
          errors.push({ line: r.line, reason: `ticker ${r.value.ticker} is not listed (ingest it as a ticker row first)` });
          continue;
        }
        // A row published after the clock would be served before its time (docs/operations.md: a day
        // whose publication time is still in the future is not visible yet).
        if (r.kind === 'score' && now !== undefined && r.value.published_at !== undefined && r.value.published_at > now) {
          errors.push({ line: r.line, reason: `published_at ${r.value.published_at} is after the clock (${now}): a row cannot be published in the future` });
          continue;
        }
        if (dup(`${r.kind}\u0000${r.value.ticker}\u0000${r.value.date}`, r.line)) continue;
        add(r.kind === 'earnings' ? 'earnings' : `${r.kind}\u0000${r.value.date}`, r);
        break;
      case 'ticker':
        if (!dup(`ticker\u0000${r.value.symbol}`, r.line)) add('ticker', r);
        break;
      case 'theme':
        if (!dup(`theme\u0000${r.value.slug}`, r.line)) add(`theme\u0000${r.value.slug}`, r);
        break;
      case 'signal':
        if (!dup(`signal\u0000${r.value.id}`, r.line)) add('signal', r);
        break;
      default: {
        const _exhaustive: never = r;
        return _exhaustive;
      }
    }
  }
  const decisions: StreamDecision[] = [];
  for (const [group, list] of groups) {
    const [kind, arg = ''] = group.split('\u0000') as [IngestRow['kind'] | 'earnings', string?];
    switch (kind) {
      case 'score':
        decisions.push(scoreDecision(arg, list as RowOf<'score'>[]));
        break;
      case 'price':
        decisions.push(
          keyedDecision(
            pricesStream(arg),
            (list as RowOf<'price'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'ClosePricesRecorded' ? e.data.closes.map((c) => [c.ticker, c.close] as const) : []))),
            (r) => r.ticker,
            (s, r) => s === r.close,
            (changed) => [{ type: 'ClosePricesRecorded', data: { date: arg, closes: changed.map((r) => ({ ticker: r.ticker, close: r.close })) } }],
          ),
        );
        break;
      case 'visits':
        decisions.push(
          keyedDecision(
            visitsStream(arg),
            (list as RowOf<'visits'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'WebVisitsRecorded' ? e.data.visits.map((v) => [v.ticker, v.visits] as const) : []))),
            (r) => r.ticker,
            (s, r) => s === r.visits,
            (changed) => [{ type: 'WebVisitsRecorded', data: { date: arg, visits: changed.map((r) => ({ ticker: r.ticker, visits: r.visits })) } }],
          ),
        );
        break;
      case 'earnings':
        decisions.push(
          keyedDecision(
            EARNINGS_STREAM,
            (list as RowOf<'earnings'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'EarningsDatesScheduled' ? e.data.rows.map((r) => [`${r.ticker}|${r.date}`, true] as const) : []))),
            (r) => `${r.ticker}|${r.date}`,
            () => true,
            (changed) => [{ type: 'EarningsDatesScheduled', data: { rows: changed } }],
          ),
        );
        break;
      case 'ticker':
        decisions.push(
          keyedDecision(
            TICKERS_STREAM,
            (list as RowOf<'ticker'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'TickerListed' ? [[e.data.symbol, e.data] as const] : []))),
            (r) => r.symbol,
            (s, r) => json(s) === json(r),
            (changed) => changed.map((data) => ({ type: 'TickerListed', data })),
          ),
        );
        break;
      case 'theme':
        decisions.push(
          keyedDecision(
            themeStream(arg),
            (list as RowOf<'theme'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'ThemeDefined' ? [[e.data.slug, e.data] as const] : []))),
            (r) => r.slug,
            (s, r) => json(s) === json(r),
            (changed) => changed.map((data) => ({ type: 'ThemeDefined', data })),
          ),
        );
        break;
      case 'signal':
        decisions.push(
          keyedDecision(
            SIGNALS_STREAM,
            (list as RowOf<'signal'>[]).map((r) => r.value),
            (h) => new Map(refEvents(h).flatMap((e) => (e.type === 'SignalPublished' ? [[String(e.data.id), e.data] as const] : []))),
            (r) => String(r.id),
            (s, r) => json(s) === json(r),
            (changed) => changed.map((data) => ({ type: 'SignalPublished', data })),
          ),
        );
        break;
    }
  }
  return { decisions, errors };
}
