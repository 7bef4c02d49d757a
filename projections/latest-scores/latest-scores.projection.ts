import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ScoreEvent, ScoreValues } from '../../src/domain/scores/score.events.js';
import { gapOf, type ScoreRow } from '../shared/score-row.js';

/** Each ticker's most recent score row (the newest date; restatements of that date update it). */
export type LatestScore = ScoreRow;

export const latestScores = defineCollection<LatestScore>({
  name: 'latest_scores',
  key: (r) => r.ticker,
  fields: ['ticker', 'date', 'service_score'],
  indexes: [['service_score'], ['date']],
});

/**
 * The date of every ticker's latest row, in one document: a publication (the whole universe)
 * is checked against it instead of loading every ticker's latest row.
 */
interface LatestDates {
  id: 'dates';
  dates: Record<string, string>;
}

const latestDates = defineCollection<LatestDates>({
  name: 'latest_score_dates',
  key: (d) => d.id,
  fields: [],
  indexes: [],
});

function latestRow(date: string, v: ScoreValues, publishedAt: string, restatedAt: string): LatestScore {
  return {
    ticker: v.ticker,
    date,
    main_street: v.main_street,
    wall_street: v.wall_street,
    service_score: v.service_score,
    divergence_gap: gapOf(v),
    estimated: v.estimated,
    published_at: publishedAt,
    restated_at: restatedAt,
  };
}

export const latestScoresProjection: Projection = {
  // v2: the latest dates index (a new name rebuilds the read models of an existing store).
  name: 'latest-scores-v3',
  collections: [latestScores, latestDates],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  apply(event: RecordedEvent, ctx: ProjectionContext) {
    return applyScores([event], ctx);
  },
  applyBatch: applyScores,
};

/** Applies score events in order. Each ticker's latest row is written once per batch. */
async function applyScores(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  const index = (await ctx.get(latestDates, 'dates')) ?? { id: 'dates' as const, dates: {} };
  let changed = false;
  /** The rows this batch wrote, by ticker. */
  const written = new Map<string, LatestScore>();
  for (const raw of events) {
    const event = raw as unknown as ScoreEvent;
    const { date, rows } = event.data;
    // A restatement of a ticker's latest date keeps its publication time: those rows are loaded.
    let current: Map<string, LatestScore> | null = null;
    if (event.type === 'ScoresRestated') {
      const latest = rows.filter((v) => index.dates[v.ticker] === date).map((v) => v.ticker);
      current = await ctx.getMany(
        latestScores,
        latest.filter((t) => !written.has(t)),
      );
      for (const t of latest) {
        const row = written.get(t);
        if (row) current.set(t, row);
      }
    }
    for (const v of rows) {
      const latest = index.dates[v.ticker];
      if (latest !== undefined && latest > date) continue;
      if (event.type === 'ScoresPublished') {
        written.set(v.ticker, latestRow(date, v, event.data.published_at, event.data.published_at));
      } else {
        const restatedAt = event.data.restated_at;
        const prev = current!.get(v.ticker);
        // Older, or applied before; at one instant the values tell two restatements apart.
        const same = prev !== undefined && prev.date === date && prev.main_street === v.main_street && prev.wall_street === v.wall_street && prev.service_score === v.service_score && prev.estimated === v.estimated;
        if (prev && (prev.restated_at > restatedAt || (prev.restated_at === restatedAt && same))) continue;
        written.set(v.ticker, latestRow(date, v, prev?.published_at ?? restatedAt, restatedAt));
      }
      if (latest !== date) {
        index.dates[v.ticker] = date;
        changed = true;
      }
    }
  }
  for (const row of written.values()) ctx.upsert(latestScores, row);
  if (changed) ctx.upsert(latestDates, index);
}
