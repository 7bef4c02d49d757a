import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection } from '../../src/core/projection.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { divergenceProjection } from '../../projections/divergence/divergence.projection.js';
import { latestScoresProjection } from '../../projections/latest-scores/latest-scores.projection.js';
import { referenceProjection } from '../../projections/reference/reference.projection.js';
import { scoreHistoryProjection } from '../../projections/score-history/score-history.projection.js';
import { ProjectionHarness } from '../support/projection-harness.js';

const row = (ticker: string, ms: number, ws: number, ss = 50, estimated = false) => ({ ticker, main_street: ms, wall_street: ws, service_score: ss, estimated });

/**
 * A log over a month and a year boundary: daily publications, prices and visits, a ticker listed
 * mid-way, restatements (of the latest date, of older dates, twice, with an older time), a late
 * publication adding a ticker to a published day, a restatement of a row never published, a
 * publication and a price applied twice, and a row at a non-standard publication time.
 */
function log(h: ProjectionHarness): RecordedEvent[] {
  const dates = ['2023-12-27', '2023-12-28', '2023-12-29', '2024-01-02', '2024-01-03', '2024-01-04', '2024-01-05'];
  const events: RecordedEvent[] = [];
  for (const t of ['AAA', 'BBB', 'CCC']) events.push(h.event('tickers', 'TickerListed', { symbol: t, company: t, sector: 'Tech', size_rank: 1 }));
  dates.forEach((date, d) => {
    const tickers = d >= 3 ? ['AAA', 'BBB', 'CCC', 'DDD'] : ['AAA', 'BBB', 'CCC'];
    if (d === 3) events.push(h.event('tickers', 'TickerListed', { symbol: 'DDD', company: 'DDD', sector: 'Tech', size_rank: 4 }));
    events.push(h.event(`prices-${date}`, 'ClosePricesRecorded', { date, closes: tickers.map((t, i) => ({ ticker: t, close: 100 + d + i / 4 })) }));
    events.push(h.event(`visits-${date}`, 'WebVisitsRecorded', { date, visits: tickers.map((t, i) => ({ ticker: t, visits: 1000 * d + i })) }));
    const publishedAt = d === 5 ? `${date}T23:30:00.000Z` : `${date}T22:00:00.000Z`;
    const rows = tickers.map((t, i) => row(t, 40 + ((d * 7 + i * 13) % 50), 45 + ((d * 3 + i * 5) % 40), 30 + d + i, i === 2 && d < 2));
    events.push(h.event(`scores-${date}`, 'ScoresPublished', { date, published_at: publishedAt, rows }));
    if (d >= 1) {
      const prev = dates[d - 1]!;
      events.push(h.event(`scores-${prev}`, 'ScoresRestated', { date: prev, restated_at: `${date}T09:00:00.000Z`, rows: [row('BBB', 70 - d, 20 + d, 55)] }));
    }
  });
  const again = events.find((e) => e.type === 'ScoresPublished' && (e.data as { date: string }).date === '2024-01-03')!;
  const price = events.find((e) => e.type === 'ClosePricesRecorded' && (e.data as { date: string }).date === '2024-01-02')!;
  events.push(
    // The latest date restated twice, the second time with an older time (ignored).
    h.event('scores-2024-01-05', 'ScoresRestated', { date: '2024-01-05', restated_at: '2024-01-06T10:00:00.000Z', rows: [row('AAA', 90, 10, 80)] }),
    h.event('scores-2024-01-05', 'ScoresRestated', { date: '2024-01-05', restated_at: '2024-01-06T08:00:00.000Z', rows: [row('AAA', 11, 12, 13)] }),
    h.event('scores-2024-01-05', 'ScoresRestated', { date: '2024-01-05', restated_at: '2024-01-07T10:00:00.000Z', rows: [row('AAA', 91, 11, 81), row('CCC', 5, 6, 7)] }),
    // A late publication adds a ticker to a published day; a restatement of a row never published.
    h.event('scores-2023-12-28', 'ScoresPublished', { date: '2023-12-28', published_at: '2024-01-03T22:00:00.000Z', rows: [row('DDD', 1, 2, 3), row('AAA', 99, 99, 99)] }),
    h.event('scores-2023-12-29', 'ScoresRestated', { date: '2023-12-29', restated_at: '2024-01-06T12:00:00.000Z', rows: [row('EEE', 50, 50, 50)] }),
    // Applied twice.
    { ...again, position: h.event('x', 'Noop', {}).position },
    { ...price, position: h.event('x', 'Noop', {}).position },
  );
  return events;
}

/** The log applied one event at a time (`apply`), then in batches of `size` (`applyBatch`). */
async function snapshots(projection: Projection, size: number) {
  const one = new ProjectionHarness(projection);
  const events = log(one);
  for (const e of events) await one.apply(e);
  const batched = new ProjectionHarness(projection);
  for (let i = 0; i < events.length; i += size) await batched.applyBatch(...events.slice(i, i + size));
  return { oneByOne: one.snapshot(), batched: batched.snapshot(), writes: batched.writes };
}

/**
 * Projections applied as the runner applies them: a batch to each projection in turn (so the
 * divergence projection reads the prices and daily scores of the whole batch), or one event to
 * every projection (a batch of one event).
 */
function together(projections: Projection[]): Projection {
  const of = (p: Projection, events: readonly RecordedEvent[]) => events.filter((e) => p.eventTypes.includes(e.type));
  return {
    name: projections.map((p) => p.name).join('+'),
    collections: projections.flatMap((p) => p.collections),
    eventTypes: [...new Set(projections.flatMap((p) => p.eventTypes))],
    async apply(event, ctx) {
      for (const p of projections) if (p.eventTypes.includes(event.type)) await p.apply(event, ctx);
    },
    async applyBatch(events, ctx) {
      for (const p of projections) {
        const mine = of(p, events);
        if (p.applyBatch) await p.applyBatch(mine, ctx);
        else for (const e of mine) await p.apply(e, ctx);
      }
    },
  };
}

describe('Projections applied a batch at a time', () => {
  const divergence = together([referenceProjection, dailyScoresProjection, divergenceProjection]);
  for (const projection of [referenceProjection, scoreHistoryProjection, latestScoresProjection, dailyScoresProjection, divergence]) {
    describe(projection.name, () => {
      it('has a batch apply', () => {
        expect(typeof projection.applyBatch).to.equal('function');
      });

      for (const size of [2, 5, 13, 1000]) {
        it(`leaves exactly the documents of one event at a time (batches of ${size})`, async () => {
          const { oneByOne, batched } = await snapshots(projection, size);
          expect(Object.keys(oneByOne)).to.not.be.empty;
          expect(batched).to.deep.equal(oneByOne);
        });
      }
    });
  }

  it('loads and writes each bucket once per batch, however many events and rows touch it', async () => {
    for (const projection of [scoreHistoryProjection, referenceProjection, latestScoresProjection]) {
      const { batched, writes } = await snapshots(projection, 1000);
      for (const collection of ['score_history', 'prices', 'web_visits', 'latest_scores']) {
        if (!batched[collection]) continue;
        expect(writes.get(collection), `${projection.name}: ${collection}`).to.equal(Object.keys(batched[collection]).length);
      }
    }
  });
});
