import { expect } from 'chai';
import { dispatchMessageId, planMessages, publicationsOf } from '../../commands/deliver-webhooks/webhook-messages.planner.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';

let n = 0;
const recorded = (type: string, data: unknown): RecordedEvent => ({
  id: `e${++n}`,
  streamId: 's',
  type,
  data,
  metadata: {},
  revision: 0,
  position: String(n).padStart(8, '0'),
  recordedAt: '2024-03-01T00:00:00.000Z',
});
const row = (ticker: string) => ({ ticker, main_street: 50, wall_street: 50, service_score: 50, estimated: false });

describe('Webhook dispatch decisions', () => {
  it('finds the rows published or restated and the dates first published in a run of events', () => {
    const p = publicationsOf([
      recorded('ScoresPublished', { date: '2024-03-04', published_at: 'x', rows: [row('AAA'), row('BBB')] }),
      recorded('DebitCredits', { request_id: 'r' }),
      recorded('ScoresRestated', { date: '2024-03-01', restated_at: 'x', rows: [row('AAA')] }),
      recorded('ScoresRestated', { date: '2024-03-04', restated_at: 'x', rows: [row('AAA')] }),
    ]);
    expect(p.rows).to.deep.equal([
      { ticker: 'AAA', date: '2024-03-04' },
      { ticker: 'BBB', date: '2024-03-04' },
      { ticker: 'AAA', date: '2024-03-01' },
    ]);
    expect(p.published_dates).to.deep.equal(['2024-03-04']);
  });

  it('gives one message per webhook with events of its type, under an id fixed by the webhook and the position', () => {
    const move = scoreMoveEvent({ ticker: 'AAA', date: '2024-03-04', service_score: 70, prior_score: 50 });
    const now = new Date('2024-03-04T21:00:00.000Z');
    const hooks = [
      { id: 1, event_type: 'score_move' as const },
      { id: 2, event_type: 'divergence_event' as const },
      { id: 3, event_type: 'score_move' as const },
    ];
    const planned = planMessages(hooks, { score_move: [move], divergence_event: [] }, '00000042', now);
    expect(planned.map((m) => m.webhook_id)).to.deep.equal([1, 3]);
    expect(planned[0]!.envelope).to.deep.equal({ events: [move], sent_at: now.toISOString(), source: 'scores-service', test: false });
    expect(planned[0]!.message_id).to.equal(dispatchMessageId(1, '00000042')).and.match(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(dispatchMessageId(1, '00000042')).not.to.equal(dispatchMessageId(3, '00000042'));
    expect(dispatchMessageId(1, '00000042')).not.to.equal(dispatchMessageId(1, '00000043'));
  });
});
