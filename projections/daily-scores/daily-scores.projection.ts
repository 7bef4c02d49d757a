import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ScoreEvent } from '../../src/events/score-events.js';
import { round1 } from '../../src/domain/composite.js';

/** One ticker's values in a day's cross-section: [main_street, wall_street, service_score, estimated]. */
export type DailyValues = [main_street: number, wall_street: number, service_score: number, estimated: 0 | 1];

/**
 * The whole universe's current scores on one date: what screener, divergence, themes and
 * earnings read for "the scores as of D" in one document instead of one per ticker.
 */
export interface DailyScores {
  date: string;
  /** When the day was first published. */
  published_at: string;
  rows: Record<string, DailyValues>;
  /** restated_at of the rows restated since publication (an idempotency guard). */
  restated: Record<string, string>;
}

export const dailyScores = defineCollection<DailyScores>({
  name: 'daily_scores',
  key: (d) => d.date,
  fields: ['date'],
  indexes: [['date']],
});

/** The dates that have scores (tiny documents: as-of lookups read these, not the cross-sections). */
export const scoreDates = defineCollection<{ date: string }>({
  name: 'score_dates',
  key: (d) => d.date,
  fields: ['date'],
  indexes: [['date']],
});

export interface CrossSectionRow {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
  service_score: number;
  divergence_gap: number;
  estimated: boolean;
}

export function crossSection(day: DailyScores): CrossSectionRow[] {
  return Object.entries(day.rows).map(([ticker, [ms, ws, ss, est]]) => ({
    ticker,
    date: day.date,
    main_street: ms,
    wall_street: ws,
    service_score: ss,
    divergence_gap: round1(ms - ws),
    estimated: est === 1,
  }));
}

export const dailyScoresProjection: Projection = {
  name: 'daily-scores',
  collections: [dailyScores, scoreDates],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ScoreEvent;
    const { date, rows } = event.data;
    const day = (await ctx.get(dailyScores, date)) ?? {
      date,
      published_at: event.type === 'ScoresPublished' ? event.data.published_at : event.data.restated_at,
      rows: {},
      restated: {},
    };
    let changed = false;
    for (const v of rows) {
      if (event.type === 'ScoresPublished') {
        if (day.rows[v.ticker]) continue; // applied before, perhaps restated since
      } else {
        const at = event.data.restated_at;
        if ((day.restated[v.ticker] ?? '') >= at) continue; // applied before
        day.restated[v.ticker] = at;
      }
      day.rows[v.ticker] = [v.main_street, v.wall_street, v.service_score, v.estimated ? 1 : 0];
      changed = true;
    }
    if (changed) {
      ctx.upsert(dailyScores, day);
      ctx.upsert(scoreDates, { date });
    }
  },
};
