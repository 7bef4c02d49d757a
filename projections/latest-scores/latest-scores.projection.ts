import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import type { ScoreEvent } from '../../src/events/score-events.js';
import { gapOf, type HistoryRow } from '../score-history/score-history.projection.js';

/** Each ticker's most recent score row (the newest date; restatements of that date update it). */
export type LatestScore = Omit<HistoryRow, 'version'>;

export const latestScores = defineCollection<LatestScore>({
  name: 'latest_scores',
  key: (r) => r.ticker,
  fields: ['ticker', 'date', 'service_score'],
  indexes: [['service_score'], ['date']],
});

export const latestScoresProjection: Projection = {
  name: 'latest-scores',
  collections: [latestScores],
  eventTypes: ['ScoresPublished', 'ScoresRestated'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ScoreEvent;
    const { date, rows } = event.data;
    const current = await ctx.getMany(
      latestScores,
      rows.map((r) => r.ticker),
    );
    for (const v of rows) {
      const prev = current.get(v.ticker);
      if (prev && prev.date > date) continue;
      let publishedAt: string;
      let restatedAt: string;
      if (event.type === 'ScoresPublished') {
        publishedAt = restatedAt = event.data.published_at;
      } else {
        restatedAt = event.data.restated_at;
        publishedAt = prev && prev.date === date ? prev.published_at : restatedAt;
        if (prev && prev.date === date && prev.restated_at >= restatedAt) continue;
      }
      ctx.upsert(latestScores, {
        ticker: v.ticker,
        date,
        main_street: v.main_street,
        wall_street: v.wall_street,
        service_score: v.service_score,
        divergence_gap: gapOf(v),
        estimated: v.estimated,
        published_at: publishedAt,
        restated_at: restatedAt,
      });
    }
  },
};
