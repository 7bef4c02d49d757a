import { expect } from 'chai';
import { DecisionLoop } from '../../commands/deliver-webhooks/decision-loop.js';
import { DispatchCheckpoint } from '../../commands/deliver-webhooks/dispatch-checkpoint.js';
import type { PlannedMessage } from '../../commands/deliver-webhooks/webhook-messages.planner.js';
import { fixedClock } from '../../src/core/clock.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';

/** A read store holding `hooks` as the only webhooks and nothing else; it records which collections were read. */
function readsWith(hooks: { id: number; event_type: string }[]): { reads: ReadStore; read: string[] } {
  const read: string[] = [];
  const store = {
    async find(def: { name: string }, filter: { event_type?: string }) {
      read.push(def.name);
      const items = def.name === 'webhooks' ? hooks.filter((h) => h.event_type === filter.event_type).map((h) => ({ ...h, is_active: true, deleted: false })) : [];
      return { items, nextCursor: null };
    },
    async get(def: { name: string }) {
      read.push(def.name);
      return null;
    },
    async getMany(def: { name: string }) {
      read.push(def.name);
      return new Map();
    },
    async commit() {},
  };
  return { reads: store as unknown as ReadStore, read };
}

const published = (position: string, date: string): RecordedEvent =>
  ({ type: 'ScoresPublished', position, streamId: 'scores', revision: 0, data: { date, rows: [{ ticker: 'AAA' }, { ticker: 'BBB' }] } }) as unknown as RecordedEvent;

async function decide(hooks: { id: number; event_type: string }[]): Promise<{ read: string[]; queued: PlannedMessage[]; checkpoint: DispatchCheckpoint }> {
  const { reads, read } = readsWith(hooks);
  const queued: PlannedMessage[] = [];
  const checkpoint = new DispatchCheckpoint(reads);
  const loop = new DecisionLoop(
    {
      events: {} as EventStore,
      reads,
      transport: fixedClock('2024-03-10T12:00:00Z'),
      limit: 4,
      queue: async (m) => (queued.push(m), null),
      publish: async () => undefined,
      stopped: () => false,
    },
    checkpoint,
  );
  loop.take([published('00000001', '2024-03-01'), published('00000002', '2024-03-04')]);
  await loop.decide();
  return { read, queued, checkpoint };
}

describe('The webhook decision loop reads only what a subscribed webhook needs', () => {
  it('reads no score move and no divergence flag when no webhook subscribes, and still moves its checkpoint', async () => {
    const { read, queued, checkpoint } = await decide([]);
    expect(read.filter((name) => name !== 'webhooks'), 'read models read beside the webhooks').to.deep.equal([]);
    expect(queued).to.deep.equal([]);
    expect(checkpoint.position).to.equal('00000002');
  });

  it('reads the score moves for a score_move webhook, and the divergence flags only for a divergence_event one', async () => {
    const moves = await decide([{ id: 1, event_type: 'score_move' }]);
    expect(moves.read).to.include('score_moves');
    expect(moves.read).not.to.include('divergence_events');

    const flags = await decide([{ id: 2, event_type: 'divergence_event' }]);
    expect(flags.read).to.include('divergence_events');
    expect(flags.read).not.to.include('score_moves');
  });
});
