import { expect } from 'chai';
import { deciderSpec } from '../support/decider-spec.js';
import { generationsDecider, type GenerationEvent } from '../../src/core/read-model-generations.decider.js';

const spec = deciderSpec(generationsDecider);
const now = new Date('2026-11-27T12:00:00Z');
const scores = { unit: 'latest-scores', collections: ['latest_scores'], projectors: ['latest-scores-v3'] };
const keys = { unit: 'accounts', collections: ['accounts', 'api_keys'], projectors: ['api-keys'] };
const rebuilt = (generation: number): GenerationEvent => ({ type: 'ReadModelsRebuilt', data: { generation, units: [scores, keys] } });
const taken = (unit: string, generation: number, owner: string): GenerationEvent => ({ type: 'ReadModelHandoverTaken', data: { unit, generation, owner } });
const switched = (unit: string, generation: number, previous: number): GenerationEvent => ({ type: 'ReadModelGenerationSwitched', data: { unit, generation, previous } });
const fold = (events: GenerationEvent[]) => events.reduce(generationsDecider.evolve, generationsDecider.initialState());

describe('Read-model generations (the replay beside a running fleet)', () => {
  it('records a rebuilt generation, newer than any before, one at a time', () => {
    spec.given([]).when({ type: 'RecordRebuild', generation: 1, units: [scores] }, now).then([{ type: 'ReadModelsRebuilt', data: { generation: 1, units: [scores] } }]);
    spec.given([rebuilt(1)]).when({ type: 'RecordRebuild', generation: 2, units: [scores] }, now).thenThrows('conflict', (err) => expect(err.message).to.match(/one replay at a time/));
    spec.given([rebuilt(1), taken('latest-scores', 1, 'w'), switched('latest-scores', 1, 0), taken('accounts', 1, 'w'), switched('accounts', 1, 0)])
      .when({ type: 'RecordRebuild', generation: 1, units: [scores] }, now)
      .thenThrows('conflict');
  });

  it('lets exactly one owner take a read model’s hand-over, and only that owner switch it', () => {
    spec.given([rebuilt(1)]).when({ type: 'TakeHandover', unit: 'accounts', generation: 1, owner: 'w1' }, now).then([taken('accounts', 1, 'w1')]);
    spec.given([rebuilt(1), taken('accounts', 1, 'w1')]).when({ type: 'TakeHandover', unit: 'accounts', generation: 1, owner: 'w1' }, now).then([]);
    spec.given([rebuilt(1), taken('accounts', 1, 'w1')]).when({ type: 'TakeHandover', unit: 'accounts', generation: 1, owner: 'w2' }, now).thenThrows('conflict');
    spec.given([rebuilt(1), taken('accounts', 1, 'w1')]).when({ type: 'SwitchGeneration', unit: 'accounts', generation: 1, owner: 'w2' }, now).thenThrows('conflict');
    spec.given([rebuilt(1)]).when({ type: 'SwitchGeneration', unit: 'accounts', generation: 1, owner: 'w1' }, now).thenThrows('conflict');
    spec.given([rebuilt(1), taken('accounts', 1, 'w1')]).when({ type: 'SwitchGeneration', unit: 'accounts', generation: 1, owner: 'w1' }, now).then([switched('accounts', 1, 0)]);
  });

  it('retires the old generation only once no read model reads it, and drops it once', () => {
    const half = fold([rebuilt(1), taken('accounts', 1, 'w'), switched('accounts', 1, 0)]);
    expect(half.units['accounts']!.live).to.equal(1);
    expect(half.units['latest-scores']).to.include({ live: 0, next: 1 });
    expect(half.retired).to.deep.equal([]);
    spec.given([rebuilt(1), taken('accounts', 1, 'w'), switched('accounts', 1, 0)]).when({ type: 'RecordDrop', generation: 0 }, now).thenThrows('conflict');
    const all = [rebuilt(1), taken('accounts', 1, 'w'), switched('accounts', 1, 0), taken('latest-scores', 1, 'r'), switched('latest-scores', 1, 0)];
    expect(fold(all).retired).to.deep.equal([0]);
    spec.given(all).when({ type: 'RecordDrop', generation: 0 }, now).then([{ type: 'ReadModelGenerationDropped', data: { generation: 0 } }]);
    spec.given([...all, { type: 'ReadModelGenerationDropped', data: { generation: 0 } }]).when({ type: 'RecordDrop', generation: 0 }, now).then([]);
  });

  it('abandons a rebuild: read models not switched stay live where they were, and the new generation is retired when none reads it', () => {
    const events: GenerationEvent[] = [rebuilt(1), taken('accounts', 1, 'w')];
    spec.given(events).when({ type: 'AbandonRebuild', generation: 1 }, now).then([{ type: 'ReadModelRebuildAbandoned', data: { generation: 1 } }]);
    const after = fold([...events, { type: 'ReadModelRebuildAbandoned', data: { generation: 1 } }]);
    expect(after.units['accounts']).to.include({ live: 0, next: null, taking: null });
    expect(after.retired).to.deep.equal([1]);
    spec.given([...events, { type: 'ReadModelRebuildAbandoned', data: { generation: 1 } }]).when({ type: 'SwitchGeneration', unit: 'accounts', generation: 1, owner: 'w' }, now).thenThrows('conflict');
  });
});
