import { expect } from 'chai';
import type { Projection } from '../../src/core/projection.js';
import { tradingDaysBetween } from '../../src/domain/trading-calendar.js';
import { packScore } from '../../projections/shared/columns.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { type DailyScores } from '../../projections/shared/daily-scores.js';
import {
  computeDay,
  divergenceProjection,
  scoredCells,
  type DivergenceCell,
  type DivergenceDay,
  type DivergenceEventDoc,
  type ScoreMoveDoc,
} from '../../projections/divergence/divergence.projection.js';
import { referenceProjection } from '../../projections/reference/reference.projection.js';
import { aggregate, toTrade } from '../../queries/get-track-record/get-track-record.query.js';
import { ProjectionHarness } from '../support/projection-harness.js';

/** reference (prices) → daily-scores → divergence, in the service's order, as one projection. */
const pipeline: Projection = {
  name: 'pipeline',
  collections: [...referenceProjection.collections, ...dailyScoresProjection.collections, ...divergenceProjection.collections],
  eventTypes: ['ClosePricesRecorded', 'ScoresPublished', 'ScoresRestated'],
  async apply(event, ctx) {
    for (const p of [referenceProjection, dailyScoresProjection, divergenceProjection]) if (p.eventTypes.includes(event.type)) await p.apply(event, ctx);
  },
};

// wall_street is always 50, so main_street = 50 + gap.
const row = (ticker: string, gap: number, ss = 50) => ({ ticker, main_street: 50 + gap, wall_street: 50, service_score: ss, estimated: false });

/*
 * The hand-made dataset: 5 tickers, 15 days. Baseline gaps B +5, C −10, D +15, E −20; A moves.
 * n = 5, so percentile = (tickers with a smaller |gap|) / 4 ∈ {0, .25, .5, .75, 1};
 * extreme = 1 (the single widest), below half = 0 or .25.
 *
 *  day  date        A gap  |gap| ranks (asc)            A pct  E pct  what happens
 *  d1   2024-01-02  +30    B5 C10 D15 E20 A30            1      .75    A bull extreme, day 1 → event A|d1 opens
 *  d2   2024-01-03  +30    same                          1      .75    A day 2
 *  d3   2024-01-04  +12    B5 C10 A12 D15 E20            .5     1      A not extreme (stays open: .5 is not < .5); E bear day 1 → E|d3 opens
 *  d4   2024-01-05  +8     B5 A8 C10 D15 E20             .25    1      A < .5 → A|d1 closes; E day 2
 *  d5   2024-01-08  +25    B5 C10 D15 E20 A25            1      .75    A bull day 1 → A|d5 opens; E day 0 (E|d3 stays open)
 *  d6   2024-01-09  +25    same                          1      .75    A day 2
 *  d7   2024-01-10  −40    B5 C10 D15 E20 A40            1      .75    A bear extreme: opposite → A|d5 closes, A|d7 (bear) opens
 *  d8   2024-01-11  −40    same                          1      .75    A day 2
 *  d9   2024-01-12  −3     A3 B5 C10 D15 E20             0      1      A < .5 → A|d7 closes; E extreme again, day 1; E|d3 continues
 *  d10  2024-01-16  +3     A3 B5 E5 C10 D15  (E −5)      0      .25    E < .5 → E|d3 closes; D bull day 1 → D|d10 opens
 *  d11–d15 (01-17…01-23) as d10                                        D day 2…6, still open
 *
 * Later a restatement of d9 sets A's gap to −50 (and its service_score to 40):
 *  d9'  A50 widest → A pct 1, bear day 3, A|d7 stays open; E .75 → not extreme (days_at_extreme 1 → 0).
 *  d10  A pct 0 → A|d7 closes on d10 instead of d9. d10's cells equal the old ones: recompute stops.
 *
 * Prices (close): A d1 100, d2 102, d3 95, d4 90, d5 80, d6 82, d7 88, d8 85, d9 70, d10–d15 72.
 *                 E d1 50, d2 52, (no d3), d4 55, d5 54, d6 53, d7 50, d8 48, d9 45, (none after).
 *                 D d10 200.
 * Events (pct_change = (close/flag − 1) × 100, 2 decimals; days = calendar days):
 *  A|01-02 bull: 100 → 90 (01-05)  = −10,            3 days
 *  A|01-08 bull:  80 → 88 (01-10)  = +10,            2 days
 *  A|01-10 bear:  88 → 70 (01-12)  = −20.4545 → −20.45, 2 days; after the restatement
 *                 88 → 72 (01-16)  = −18.1818 → −18.18, 6 days
 *  E|01-04 bear:  52 (01-04 has no price: 01-03's) → 45 (01-16 has none: 01-12's) = −13.4615 → −13.46, 12 days
 *  D|01-16 bull:  200, open.
 * Track record after the restatement (long bull, short bear):
 *  −10 (loss), +10, +18.18, +13.46 → 4 trades, win_rate 3/4 = .75, avg 31.64/4 = 7.91,
 *  median (10 + 13.46)/2 = 11.73, avg days (3 + 2 + 6 + 12)/4 = 5.75 → 5.8, best 18.18, worst −10.
 * Score moves (service_score 50 unless said): A d7 62, d8 62, d9 55, d10… 44; C d5 40.
 *  A|01-10 50→62 +12; A|01-16 55→44 −11; C|01-08 50→40 −10 (10 counts); C|01-09 40→50 +10. A d9 55 is −7: no move.
 *  After the restatement (A d9 40): A|01-12 62→40 −22 appears, A|01-16 becomes 40→44 +4 and goes.
 */
const D = ['2024-01-02', '2024-01-03', '2024-01-04', '2024-01-05', '2024-01-08', '2024-01-09', '2024-01-10', '2024-01-11', '2024-01-12', '2024-01-16', '2024-01-17', '2024-01-18', '2024-01-19', '2024-01-22', '2024-01-23'];
const A_GAP = [30, 30, 12, 8, 25, 25, -40, -40, -3, 3, 3, 3, 3, 3, 3];
const A_SS = [50, 50, 50, 50, 50, 50, 62, 62, 55, 44, 44, 44, 44, 44, 44];
const E_GAP = [-20, -20, -20, -20, -20, -20, -20, -20, -20, -5, -5, -5, -5, -5, -5];
const C_SS = [50, 50, 50, 50, 40, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50];
const A_PRICE = [100, 102, 95, 90, 80, 82, 88, 85, 70, 72, 72, 72, 72, 72, 72];
const E_PRICE: (number | null)[] = [50, 52, null, 55, 54, 53, 50, 48, 45, null, null, null, null, null, null];

/** The events of the dataset; `over` replaces A's [gap, service_score] on some day indexes. */
function dataset(h: ProjectionHarness, d9Gap = -3, d9Score = 55, over: Record<number, [number, number]> = {}) {
  const events = [];
  for (let i = 0; i < D.length; i++) {
    const date = D[i]!;
    const closes = [{ ticker: 'A', close: A_PRICE[i]! }];
    if (E_PRICE[i] != null) closes.push({ ticker: 'E', close: E_PRICE[i]! });
    if (i === 9) closes.push({ ticker: 'D', close: 200 });
    events.push(h.event(`prices-${date}`, 'ClosePricesRecorded', { date, closes }));
    const [aGap, aSs] = over[i] ?? (i === 8 ? [d9Gap, d9Score] : [A_GAP[i]!, A_SS[i]!]);
    events.push(
      h.event(`scores-${date}`, 'ScoresPublished', {
        date,
        published_at: `${date}T22:00:00.000Z`,
        rows: [row('A', aGap, aSs), row('B', 5), row('C', -10, C_SS[i]), row('D', 15), row('E', E_GAP[i]!)],
      }),
    );
  }
  return events;
}
const restateD9 = (h: ProjectionHarness) =>
  h.event('scores-2024-01-12', 'ScoresRestated', { date: '2024-01-12', restated_at: '2024-01-16T14:00:00.000Z', rows: [row('A', -50, 40)] });

const day = (h: ProjectionHarness, date: string) => h.docs.get('divergence_days')!.get(date) as DivergenceDay;
/** The cells of the tickers scored on a date (the state stored, gap and percentile from the day's scores). */
const cells = (h: ProjectionHarness, date: string) => scoredCells(day(h, date), h.docs.get('daily_scores')!.get(date) as DailyScores);
const cell = (h: ProjectionHarness, date: string, t: string) => cells(h, date)[t]!;
/** A day's scores from ticker → [main_street, wall_street, service_score]. */
const scoresOf = (date: string, rows: Record<string, [number, number, number]>): DailyScores => {
  const tickers = Object.keys(rows);
  return {
    date,
    published_at: `${date}T22:00:00.000Z`,
    tickers,
    main_street: tickers.map((t) => packScore(rows[t]![0])),
    wall_street: tickers.map((t) => packScore(rows[t]![1])),
    service_score: tickers.map((t) => packScore(rows[t]![2])),
    estimated: tickers.map(() => 0),
    restated: {},
  };
};
const events = (h: ProjectionHarness) => Object.values(h.snapshot()['divergence_events'] ?? {}) as DivergenceEventDoc[];
const moves = (h: ProjectionHarness) => Object.values(h.snapshot()['score_moves'] ?? {}) as ScoreMoveDoc[];
const divergenceDocs = (h: ProjectionHarness) => {
  const s = h.snapshot();
  return { days: s['divergence_days'], dates: s['divergence_dates'], events: s['divergence_events'], moves: s['score_moves'] };
};
const closed = (e: Omit<DivergenceEventDoc, 'status'>): DivergenceEventDoc => ({ ...e, status: 'closed' });

describe('Divergence projection', () => {
  describe('percentile ranks', () => {
    it('is the share of the other tickers with a strictly smaller |gap|; ties share the lower rank', () => {
      // |gap| 0, 5, 5, 10 → n − 1 = 3: 0 → 0/3, 5 → 1/3 (both), 10 → 3/3.
      const scores = scoresOf('2024-01-02', { W: [50, 50, 50], X: [55, 50, 50], Y: [45, 50, 50], Z: [60, 50, 50] });
      const d = computeDay('2024-01-02', scores, null);
      const c = scoredCells(d, scores);
      expect([c['W']![1], c['X']![1], c['Y']![1], c['Z']![1]]).to.deep.equal([0, 0.3333, 0.3333, 1]);
      // Only Z is at an extreme (its event opens); a zero gap never is, and only Z has a state stored.
      expect(c['Z']).to.deep.equal([10, 1, 1, 1, '2024-01-02', 1, 0, 50]);
      expect(c['W']!.slice(2, 5)).to.deep.equal([0, 0, null]);
      expect(d.state).to.deep.equal({ Z: [1, 1, '2024-01-02', 1, 0] });
    });
  });

  describe('When 5 tickers are published over 15 days', () => {
    const h = new ProjectionHarness(pipeline);
    before(() => h.apply(...dataset(h)));

    it('ranks each day and counts days at an extreme per direction', () => {
      // d1: A30 B5 C10 D15 E20
      expect(cells(h, D[0]!)).to.deep.equal({
        A: [30, 1, 1, 1, D[0]!, 1, 0, 50],
        B: [5, 0, 0, 0, null, 0, 0, 50],
        C: [-10, 0.25, 0, 0, null, 0, 0, 50],
        D: [15, 0.5, 0, 0, null, 0, 0, 50],
        E: [-20, 0.75, 0, 0, null, 0, 0, 50],
      } satisfies Record<string, DivergenceCell>);
      const aDays = D.map((d) => cell(h, d, 'A')[2]);
      const eDays = D.map((d) => cell(h, d, 'E')[2]);
      const dDays = D.map((d) => cell(h, d, 'D')[2]);
      expect(aDays).to.deep.equal([1, 2, 0, 0, 1, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0]);
      expect(eDays).to.deep.equal([0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
      expect(dDays).to.deep.equal([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
      expect(D.map((d) => cell(h, d, 'A')[1])).to.deep.equal([1, 1, 0.5, 0.25, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
      expect(D.map((d) => cell(h, d, 'E')[1])).to.deep.equal([0.75, 0.75, 1, 1, 0.75, 0.75, 0.75, 0.75, 1, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]);
      // E's open event runs from d3 (day 0) to d9 (day 6), through its second extreme run.
      expect(cell(h, D[8]!, 'E').slice(3)).to.deep.equal([-1, D[2], -1, 6, 50]);
      expect(cell(h, D[14]!, 'D').slice(3)).to.deep.equal([1, D[9], 1, 5, 50]);
    });

    it('opens and closes events with their prices, percent change and calendar days', () => {
      expect(events(h)).to.deep.equal([
        closed({ ticker: 'A', direction: 'bull', flag_date: '2024-01-02', flag_gap: 30, price_at_flag: 100, close_date: '2024-01-05', price_at_close: 90, pct_change: -10, days: 3 }),
        closed({ ticker: 'A', direction: 'bull', flag_date: '2024-01-08', flag_gap: 25, price_at_flag: 80, close_date: '2024-01-10', price_at_close: 88, pct_change: 10, days: 2 }),
        closed({ ticker: 'A', direction: 'bear', flag_date: '2024-01-10', flag_gap: -40, price_at_flag: 88, close_date: '2024-01-12', price_at_close: 70, pct_change: -20.45, days: 2 }),
        { ticker: 'D', direction: 'bull', flag_date: '2024-01-16', flag_gap: 15, price_at_flag: 200, close_date: null, price_at_close: null, pct_change: null, days: null, status: 'open' },
        closed({ ticker: 'E', direction: 'bear', flag_date: '2024-01-04', flag_gap: -20, price_at_flag: 52, close_date: '2024-01-16', price_at_close: 45, pct_change: -13.46, days: 12 }),
      ]);
    });

    it('records score moves of 10 or more', () => {
      expect(moves(h)).to.deep.equal([
        { ticker: 'A', date: '2024-01-10', service_score: 62, prior_score: 50, delta: 12 },
        { ticker: 'A', date: '2024-01-16', service_score: 44, prior_score: 55, delta: -11 },
        { ticker: 'C', date: '2024-01-08', service_score: 40, prior_score: 50, delta: -10 },
        { ticker: 'C', date: '2024-01-09', service_score: 50, prior_score: 40, delta: 10 },
      ]);
    });

    it('changes nothing when the same events are applied again', async () => {
      const before = h.snapshot();
      const again = new ProjectionHarness(pipeline);
      const evs = dataset(again);
      // same events (same positions) replayed into the harness that already has them
      await h.apply(...evs);
      expect(h.snapshot()).to.deep.equal(before);
    });

    describe('and d9 is restated so that A is at an extreme and E is not', () => {
      before(() => h.apply(restateD9(h)));

      it('recomputes from d9: A stays at its bear extreme and E loses its extreme day', () => {
        expect(cell(h, D[8]!, 'A')).to.deep.equal([-50, 1, 3, -1, '2024-01-10', -1, 2, 40]);
        expect(cell(h, D[8]!, 'E')).to.deep.equal([-20, 0.75, 0, 0, '2024-01-04', -1, 6, 50]);
        expect(cell(h, D[9]!, 'A')).to.deep.equal([3, 0, 0, 0, null, 0, 0, 44]);
      });

      it('moves the close of A’s bear event to d10 and keeps the others', () => {
        const byId = new Map(events(h).map((e) => [`${e.ticker}|${e.flag_date}`, e]));
        expect(byId.get('A|2024-01-10')).to.deep.equal(
          closed({ ticker: 'A', direction: 'bear', flag_date: '2024-01-10', flag_gap: -40, price_at_flag: 88, close_date: '2024-01-16', price_at_close: 72, pct_change: -18.18, days: 6 }),
        );
        expect(byId.size).to.equal(5);
        expect(byId.get('E|2024-01-04')!.close_date).to.equal('2024-01-16');
      });

      it('replaces the score moves around d9', () => {
        expect(moves(h).filter((m) => m.ticker === 'A')).to.deep.equal([
          { ticker: 'A', date: '2024-01-10', service_score: 62, prior_score: 50, delta: 12 },
          { ticker: 'A', date: '2024-01-12', service_score: 40, prior_score: 62, delta: -22 },
        ]);
      });

      it('ends exactly where publishing the corrected value in the first place ends', async () => {
        const direct = new ProjectionHarness(pipeline);
        await direct.apply(...dataset(direct, -50, 40));
        expect(divergenceDocs(h)).to.deep.equal(divergenceDocs(direct));
      });

      it('gives the hand-computed track record', () => {
        const trades = events(h)
          .map(toTrade)
          .filter((t) => t !== null);
        expect(trades.map((t) => [t.ticker, t.direction, t.return_pct, t.days_held, t.win])).to.deep.equal([
          ['A', 'long', -10, 3, false],
          ['A', 'long', 10, 2, true],
          ['A', 'short', 18.18, 6, true],
          ['E', 'short', 13.46, 12, true],
        ]);
        expect(aggregate(trades)).to.deep.equal({
          closed_trades: 4,
          win_rate: 0.75,
          avg_return_pct: 7.91,
          median_return_pct: 11.73,
          avg_days_held: 5.8,
          best_return_pct: 18.18,
          worst_return_pct: -10,
        });
      });

      it('undoes opens and closes when a later restatement removes an extreme', async () => {
        // d7 A +35 instead of −40: A's bull run goes on (day 3) and A|d5 stays open; d8's −40 is
        // then the opposite extreme: A|d5 closes on d8 (88 → 85) and A|d8 (bear) opens.
        const restated = [
          h.event('scores-2024-01-10', 'ScoresRestated', { date: '2024-01-10', restated_at: '2024-01-17T14:00:00.000Z', rows: [row('A', 35, 62)] }),
        ];
        const scratch = new ProjectionHarness(pipeline);
        await scratch.apply(...dataset(scratch));
        await scratch.apply(restateD9(scratch), ...restated.map((e) => scratch.event(e.streamId, e.type, e.data)));
        const direct = new ProjectionHarness(pipeline);
        await direct.apply(...dataset(direct, -50, 40, { 6: [35, 62] }));
        expect(divergenceDocs(scratch)).to.deep.equal(divergenceDocs(direct));
        const ids = events(direct).map((e) => `${e.ticker}|${e.flag_date}|${e.close_date}`);
        expect(ids).to.deep.equal(['A|2024-01-02|2024-01-05', 'A|2024-01-08|2024-01-11', 'A|2024-01-11|2024-01-16', 'D|2024-01-16|null', 'E|2024-01-04|2024-01-16']);
      });

      it('after a restatement that changes only values, fixes the next day’s moves without recomputing it', async () => {
        // d2 A +35 (still the widest: same state) with service_score 61: moves A|d2 +11 and A|d3 −11 appear.
        const scratch = new ProjectionHarness(pipeline);
        await scratch.apply(...dataset(scratch));
        const d3Before = day(scratch, D[2]!);
        await scratch.apply(
          scratch.event('scores-2024-01-03', 'ScoresRestated', { date: '2024-01-03', restated_at: '2024-01-05T14:00:00.000Z', rows: [row('A', 35, 61)] }),
        );
        expect(day(scratch, D[2]!)).to.equal(d3Before); // not rewritten
        const direct = new ProjectionHarness(pipeline);
        await direct.apply(...dataset(direct, -3, 55, { 1: [35, 61] }));
        expect(divergenceDocs(scratch)).to.deep.equal(divergenceDocs(direct));
        expect(moves(direct).filter((m) => m.ticker === 'A' && m.date < '2024-01-05')).to.deep.equal([
          { ticker: 'A', date: '2024-01-03', service_score: 61, prior_score: 50, delta: 11 },
          { ticker: 'A', date: '2024-01-04', service_score: 50, prior_score: 61, delta: -11 },
        ]);
      });

      it('refreshes an event’s price when a late close arrives for its date', async () => {
        await h.apply(h.event('prices-2024-01-16', 'ClosePricesRecorded', { date: '2024-01-16', closes: [{ ticker: 'D', close: 210 }] }));
        const d = events(h).find((e) => e.ticker === 'D')!;
        expect(d.price_at_flag).to.equal(210);
      });
    });
  });

  describe('When a ticker stays at an extreme for more than 60 trading days', () => {
    // X gap 20, Y gap 1: X is the widest of 2 (percentile 1) every day. Its event opens on day 0
    // and closes on day 60 (its 60th trading day after the flag); the run goes on, but an event
    // opens only on the first day of a run, so no second event opens.
    const h = new ProjectionHarness(pipeline);
    const days = tradingDaysBetween('2024-01-02', '2024-05-01').slice(0, 65);
    before(() =>
      h.apply(
        ...days.flatMap((date, i) => [
          h.event(`prices-${date}`, 'ClosePricesRecorded', { date, closes: [{ ticker: 'X', close: 100 + i }] }),
          h.event(`scores-${date}`, 'ScoresPublished', { date, published_at: `${date}T22:00:00.000Z`, rows: [row('X', 20), row('Y', 1)] }),
        ]),
      ),
    );

    it('closes the event after 60 trading days at the price of that day', () => {
      expect(events(h)).to.deep.equal([
        closed({
          ticker: 'X',
          direction: 'bull',
          flag_date: days[0]!,
          flag_gap: 20,
          price_at_flag: 100,
          close_date: days[60]!,
          price_at_close: 160,
          pct_change: 60,
          days: Math.round((Date.parse(days[60]!) - Date.parse(days[0]!)) / 86_400_000),
        }),
      ]);
      expect(cell(h, days[64]!, 'X').slice(2, 5)).to.deep.equal([65, 1, null]);
    });
  });
});
