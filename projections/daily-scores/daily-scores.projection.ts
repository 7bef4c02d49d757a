import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ScoreEvent } from '../../src/domain/scores/score.events.js';
import { round1 } from '../../src/domain/composite.js';
import { holds, packScore, scoreAt } from '../shared/columns.js';
import { dailyScores, emptyDay, type DailyScores } from '../shared/daily-scores.js';
import type { ScoreFields } from '../shared/score-row.js';

/** The dates that have scores (tiny documents: as-of lookups read these, not the cross-sections). */
export const scoreDates = defineCollection<{ date: string }>({
  name: 'score_dates',
  key: (d) => d.date,
  fields: ['date'],
  indexes: [['date']],
});

/** A score row of a day's cross-section: every ticker in it has both scores, so a gap. */
export interface CrossSectionRow extends Omit<ScoreFields, 'divergence_gap'> {
  divergence_gap: number;
}

export function crossSection(day: DailyScores): CrossSectionRow[] {
  return day.tickers.map((ticker, i) => {
    const ms = scoreAt(day.main_street, i);
    const ws = scoreAt(day.wall_street, i);
    return {
      ticker,
      date: day.date,
      main_street: ms,
      wall_street: ws,
      service_score: scoreAt(day.service_score, i),
      divergence_gap: round1(ms - ws),
      estimated: day.estimated[i] === 1,
    };
  });
}

export const dailyScoresProjection: Projection = {
  // v2: column-wise cross-sections (a new name rebuilds the read models of an existing store).
  name: 'daily-scores-v3',
  collections: [dailyScores, scoreDates],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  apply(event: RecordedEvent, ctx: ProjectionContext) {
    return applyScores([event], ctx);
  },
  applyBatch: applyScores,
};

/** Applies score events in order, each to its day's cross-section. */
async function applyScores(events: readonly RecordedEvent[], ctx: ProjectionContext): Promise<void> {
  // Where each ticker is in the day of the publication being applied (`event` = its number):
  // one map for the whole batch, so a publication looks its tickers up instead of indexing them.
  const seen = new Map<string, { event: number; i: number }>();
  const mark = (ticker: string, event: number, i: number) => {
    const at = seen.get(ticker);
    if (!at) seen.set(ticker, { event, i });
    else if (at.event !== event) {
      at.event = event;
      at.i = i;
    }
  };
  // The batch's days in one read (the runner keeps them for the batch): on a server a read per day is a round trip per day.
  await ctx.getMany(dailyScores, [...new Set(events.map((e) => (e as unknown as ScoreEvent).data.date))]);
  for (let e = 0; e < events.length; e++) {
    const event = events[e] as unknown as ScoreEvent;
    const { date, rows } = event.data;
    const day = (await ctx.get(dailyScores, date)) ?? emptyDay(date, event.type === 'ScoresPublished' ? event.data.published_at : event.data.restated_at);
    // A publication carries the whole universe (index it); a restatement a few rows (search them).
    const published = event.type === 'ScoresPublished';
    if (published) for (let i = 0; i < day.tickers.length; i++) mark(day.tickers[i]!, e, i);
    let changed = false;
    for (const v of rows) {
      let i: number;
      if (published) {
        const at = seen.get(v.ticker);
        if (at && at.event === e) continue; // applied before, perhaps restated since
        i = day.tickers.push(v.ticker) - 1;
        mark(v.ticker, e, i);
      } else {
        const at = event.data.restated_at;
        const before = day.restated[v.ticker] ?? '';
        i = day.tickers.indexOf(v.ticker);
        // Older, or applied before; at one instant the values tell two restatements apart.
        if (before > at || (before === at && i >= 0 && holds(day, i, v))) continue;
        day.restated[v.ticker] = at;
        if (i < 0) i = day.tickers.push(v.ticker) - 1;
      }
      day.main_street[i] = packScore(v.main_street);
      day.wall_street[i] = packScore(v.wall_street);
      day.service_score[i] = packScore(v.service_score);
      day.estimated[i] = v.estimated ? 1 : 0;
      changed = true;
    }
    if (changed) {
      ctx.upsert(dailyScores, day);
      ctx.upsert(scoreDates, { date });
    }
  }
}
