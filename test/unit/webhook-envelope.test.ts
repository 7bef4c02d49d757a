import { expect } from 'chai';
import {
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_SOURCE,
  divergenceFlagEvent,
  liveEnvelope,
  scoreMoveEvent,
  testEnvelope,
  type DivergenceFlagFacts,
} from '../../src/domain/webhooks/webhook-envelope.js';

const sentAt = new Date('2024-03-01T12:00:00.123Z');
const ENVELOPE_KEYS = ['events', 'sent_at', 'source', 'test'];
const SCORE_MOVE_KEYS = ['type', 'ticker', 'date', 'service_score', 'prior_score', 'delta', 'test'];
const DIVERGENCE_KEYS = ['type', 'ticker', 'date', 'direction', 'gap', 'percentile', 'main_street', 'wall_street', 'service_score', 'test'];
const flag: DivergenceFlagFacts = { ticker: 'NKE', date: '2024-02-29', direction: 'bear', gap: -31.4, percentile: 0.9968, main_street: 30.1, wall_street: 61.5, service_score: 38.9 };

describe('Webhook envelope', () => {
  describe('When a score moves', () => {
    it('sends type, ticker, date, both scores, the delta and test, nothing else', () => {
      const e = scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 71.4, prior_score: 60.2 });
      expect(Object.keys(e)).to.have.members(SCORE_MOVE_KEYS).and.have.length(SCORE_MOVE_KEYS.length);
      expect(e).to.deep.equal({ type: 'score_move', ticker: 'AAPL', date: '2024-02-29', service_score: 71.4, prior_score: 60.2, delta: 11.2, test: false });
    });

    it('gives a fall as a negative delta rounded to 1 decimal', () => {
      expect(scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 40.3, prior_score: 52.4 }).delta).to.equal(-12.1);
    });

    it('ignores fields the read model has beyond the facts', () => {
      const doc = { ticker: 'AAPL', date: '2024-02-29', service_score: 71.4, prior_score: 60.2, delta: 11.2, _id: 'AAPL|2024-02-29' };
      expect(Object.keys(scoreMoveEvent(doc))).to.have.members(SCORE_MOVE_KEYS).and.have.length(SCORE_MOVE_KEYS.length);
    });
  });

  describe('When a divergence extreme starts', () => {
    it('sends the flag date, direction, gap, percentile and the three scores, nothing else', () => {
      const e = divergenceFlagEvent({ ...flag, price_at_flag: 71.02 } as DivergenceFlagFacts);
      expect(Object.keys(e)).to.have.members(DIVERGENCE_KEYS).and.have.length(DIVERGENCE_KEYS.length);
      expect(e).to.deep.equal({ type: 'divergence_event', ...flag, test: false });
    });
  });

  describe('When a live message is made', () => {
    const events = [scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 71.4, prior_score: 60.2 }), divergenceFlagEvent(flag)];

    it('wraps the events with sent_at in ISO 8601 UTC, the source and test false', () => {
      const body = liveEnvelope(events, sentAt);
      expect(Object.keys(body)).to.have.members(ENVELOPE_KEYS).and.have.length(ENVELOPE_KEYS.length);
      expect(body).to.deep.equal({ events, sent_at: '2024-03-01T12:00:00.123Z', source: 'scores-service', test: false });
    });

    it('refuses an empty message and a test event', () => {
      expect(() => liveEnvelope([], sentAt)).to.throw(RangeError);
      expect(() => liveEnvelope([{ ...events[0]!, test: true }], sentAt)).to.throw(RangeError);
    });
  });

  describe('When a test delivery is made', () => {
    for (const type of WEBHOOK_EVENT_TYPES) {
      it(`carries one plausible ${type} marked test, in an envelope marked test`, () => {
        const body = testEnvelope(type, sentAt);
        expect(Object.keys(body)).to.have.members(ENVELOPE_KEYS).and.have.length(ENVELOPE_KEYS.length);
        expect(body).to.include({ sent_at: '2024-03-01T12:00:00.123Z', source: WEBHOOK_SOURCE, test: true });
        expect(body.events).to.have.length(1);
        const [event] = body.events;
        expect(event).to.include({ type, test: true });
        expect(Object.keys(event!)).to.have.members(type === 'score_move' ? SCORE_MOVE_KEYS : DIVERGENCE_KEYS).and.have.length((type === 'score_move' ? SCORE_MOVE_KEYS : DIVERGENCE_KEYS).length);
      });
    }

    it('gives a score move of 10 or more whose delta is the difference of its scores', () => {
      const [e] = testEnvelope('score_move', sentAt).events;
      if (e?.type !== 'score_move') throw new Error('expected a score_move');
      expect(Math.abs(e.delta)).to.be.at.least(10);
      expect(e.delta).to.equal(Math.round((e.service_score - e.prior_score) * 10) / 10);
    });

    it('gives a divergence at an extreme whose gap and direction agree with its scores', () => {
      const [e] = testEnvelope('divergence_event', sentAt).events;
      if (e?.type !== 'divergence_event') throw new Error('expected a divergence_event');
      expect(e.percentile).to.be.at.least(0.95);
      expect(e.gap).to.equal(Math.round((e.main_street - e.wall_street) * 10) / 10);
      expect(e.direction).to.equal(e.gap > 0 ? 'bull' : 'bear');
      expect(e.date).to.match(/^\d{4}-\d{2}-\d{2}$/);
    });

    it('gives a fresh body each time, so changing one leaves the next alone', () => {
      testEnvelope('score_move', sentAt).events[0]!.test = false;
      expect(testEnvelope('score_move', sentAt).events[0]!.test).to.equal(true);
    });
  });
});
