import { expect } from 'chai';
import { latestScoresProjection } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowsBetween, scoreHistoryProjection, type HistoryBucket } from '../../projections/score-history/score-history.projection.js';
import { ProjectionHarness } from '../support/projection-harness.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { packScore } from '../../projections/shared/columns.js';
import type { Projection } from '../../src/core/projection.js';

const row = (ticker: string, ms: number, ws: number, ss = 50) => ({ ticker, main_street: ms, wall_street: ws, service_score: ss, estimated: false });

describe('Score history projection', () => {
  describe('When a date is published and later restated', () => {
    const h = new ProjectionHarness(scoreHistoryProjection);
    const published = h.event('scores-2024-01-02', 'ScoresPublished', {
      date: '2024-01-02',
      published_at: '2024-01-02T22:00:00.000Z',
      rows: [row('AAPL', 60, 50), row('MSFT', 40, 45)],
    });
    const restated = h.event('scores-2024-01-02', 'ScoresRestated', {
      date: '2024-01-02',
      restated_at: '2024-01-04T13:15:00.000Z',
      rows: [row('AAPL', 62, 50, 52)],
    });

    before(() => h.apply(published, restated));

    const historyOf = (ticker: string) => rowsBetween([h.docs.get('score_history')!.get(`${ticker}|2024-01`) as HistoryBucket])[0];

    it('keeps the current value with restated_at = when it was last written', () => {
      const aapl = historyOf('AAPL');
      expect(aapl).to.deep.include({
        main_street: 62,
        service_score: 52,
        divergence_gap: 12,
        published_at: '2024-01-02T22:00:00.000Z',
        restated_at: '2024-01-04T13:15:00.000Z',
        version: 2,
      });
      expect(historyOf('MSFT')).to.deep.include({ restated_at: '2024-01-02T22:00:00.000Z', divergence_gap: -5 });
      expect((h.docs.get('score_history')!.get('AAPL|2024-01') as HistoryBucket).written_at).to.equal('2024-01-04T13:15:00.000Z');
    });

    it('numbers the score events in log order and gives each row the number of the event that last wrote it (the sync cursor)', () => {
      expect(h.docs.get('score_history_head')!.get('head')).to.deep.equal({ id: 'head', seq: 2, position: restated.position });
      expect(historyOf('AAPL')!.seq).to.equal(2);
      expect(historyOf('MSFT')!.seq).to.equal(1);
      expect((h.docs.get('score_history')!.get('AAPL|2024-01') as HistoryBucket).written_seq).to.equal(2);
      expect((h.docs.get('score_history')!.get('MSFT|2024-01') as HistoryBucket).written_seq).to.equal(1);
    });

    it('keeps the superseded value with the interval in which it was current', () => {
      const versions = [...h.docs.get('score_versions')!.values()];
      expect(versions).to.deep.equal([
        {
          ticker: 'AAPL',
          date: '2024-01-02',
          version: 1,
          main_street: 60,
          wall_street: 50,
          service_score: 50,
          estimated: false,
          valid_from: '2024-01-02T22:00:00.000Z',
          valid_to: '2024-01-04T13:15:00.000Z',
          seq: 1,
        },
      ]);
    });

    it('changes nothing when the same events are applied again', async () => {
      const before = h.snapshot();
      await h.apply(published, restated);
      await h.apply(published);
      expect(h.snapshot()).to.deep.equal(before);
    });
  });

  describe('When the restatement is applied twice in a row', () => {
    it('writes one version, not two', async () => {
      const h = new ProjectionHarness(scoreHistoryProjection);
      await h.apply(
        h.event('scores-d', 'ScoresPublished', { date: '2024-02-01', published_at: '2024-02-01T22:00:00Z', rows: [row('AAPL', 1, 2)] }),
      );
      const r = h.event('scores-d', 'ScoresRestated', { date: '2024-02-01', restated_at: '2024-02-03T22:00:00Z', rows: [row('AAPL', 3, 2)] });
      await h.apply(r);
      const once = h.snapshot();
      await h.apply(r);
      expect(h.snapshot()).to.deep.equal(once);
    });
  });
});

describe('Two restatements of one row at the same instant (a pinned clock, one millisecond)', () => {
  const events = (h: ProjectionHarness) => [
    h.event('scores-d', 'ScoresPublished', { date: '2024-02-01', published_at: '2024-02-01T22:00:00Z', rows: [row('AAPL', 1, 2)] }),
    h.event('scores-d', 'ScoresRestated', { date: '2024-02-01', restated_at: '2024-02-03T22:00:00Z', rows: [row('AAPL', 3, 2)] }),
    h.event('scores-d', 'ScoresRestated', { date: '2024-02-01', restated_at: '2024-02-03T22:00:00Z', rows: [row('AAPL', 7, 2)] }),
  ];
  const mainStreet: [Projection, (h: ProjectionHarness) => unknown][] = [
    [scoreHistoryProjection, (h) => rowsBetween([...h.docs.get('score_history')!.values()] as HistoryBucket[])[0]!.main_street],
    [latestScoresProjection, (h) => (h.docs.get('latest_scores')!.get('AAPL') as { main_street: number }).main_street],
    [dailyScoresProjection, (h) => (h.docs.get('daily_scores')!.get('2024-02-01') as { main_street: number[] }).main_street[0]],
  ];
  for (const [projection, read] of mainStreet) {
    it(`${projection.name}: serves the later one, and the same one again changes nothing`, async () => {
      const h = new ProjectionHarness(projection);
      const all = events(h);
      await h.apply(...all);
      expect(read(h)).to.be.oneOf([7, packScore(7)]);
      const once = h.snapshot();
      await h.apply(all[2]!);
      expect(h.snapshot()).to.deep.equal(once);
    });
  }
});

describe('Latest scores projection', () => {
  describe('When an older date is restated after a newer one was published', () => {
    it('keeps the newest date as the latest', async () => {
      const h = new ProjectionHarness(latestScoresProjection);
      await h.apply(
        h.event('scores-1', 'ScoresPublished', { date: '2024-01-02', published_at: '2024-01-02T22:00:00Z', rows: [row('AAPL', 60, 50)] }),
        h.event('scores-2', 'ScoresPublished', { date: '2024-01-03', published_at: '2024-01-03T22:00:00Z', rows: [row('AAPL', 61, 50)] }),
        h.event('scores-1', 'ScoresRestated', { date: '2024-01-02', restated_at: '2024-01-04T01:00:00Z', rows: [row('AAPL', 70, 50)] }),
      );
      expect(h.docs.get('latest_scores')!.get('AAPL')).to.deep.include({ date: '2024-01-03', main_street: 61 });
    });

    it('takes a restatement of the latest date, and is idempotent', async () => {
      const h = new ProjectionHarness(latestScoresProjection);
      const r = h.event('scores-2', 'ScoresRestated', { date: '2024-01-03', restated_at: '2024-01-05T01:00:00Z', rows: [row('AAPL', 66, 50)] });
      await h.apply(
        h.event('scores-2', 'ScoresPublished', { date: '2024-01-03', published_at: '2024-01-03T22:00:00Z', rows: [row('AAPL', 61, 50)] }),
        r,
      );
      const once = h.snapshot();
      await h.apply(r);
      expect(h.snapshot()).to.deep.equal(once);
      expect(h.docs.get('latest_scores')!.get('AAPL')).to.deep.include({
        main_street: 66,
        published_at: '2024-01-03T22:00:00Z',
        restated_at: '2024-01-05T01:00:00Z',
      });
    });
  });
});
