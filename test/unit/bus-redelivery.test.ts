import { expect } from 'chai';
import { MemberStoppedError, handleUntilDone } from '../../src/core/bus-redelivery.js';
import { LeaseLostError } from '../../src/core/lease.js';

/** A member's hooks: stopped once `stop()` is called; counts the failures reported and the heartbeats. */
function member() {
  const state = { stopped: false, reported: [] as unknown[], heartbeats: 0 };
  return {
    state,
    stop: () => void (state.stopped = true),
    hooks: {
      stopped: () => state.stopped,
      report: (err: unknown) => void state.reported.push(err),
      pausing: async () => void state.heartbeats++,
    },
  };
}

describe('Bus redelivery (handleUntilDone)', () => {
  it('runs a handler that failed again until it succeeds', async () => {
    const m = member();
    let calls = 0;
    await handleUntilDone(async () => {
      if (++calls < 3) throw new Error('store did not answer');
    }, m.hooks);
    expect(calls).to.equal(3);
    expect(m.state.reported).to.have.length(2);
  });

  it('never runs a handler again after a LeaseLostError: the message waits, heartbeating, for its member to stop', async () => {
    const m = member();
    const lost = new LeaseLostError('webhooks', 'worker-a');
    let calls = 0;
    const handling = handleUntilDone(async () => {
      calls++;
      throw lost;
    }, m.hooks).catch((err: unknown) => err);

    // Three pauses over (each ends in a heartbeat), after each of which another failure runs the handler again.
    while (m.state.heartbeats < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(calls, 'handler runs').to.equal(1);
    m.stop();

    expect(await handling).to.be.instanceOf(MemberStoppedError);
    expect(calls).to.equal(1);
    expect(m.state.reported).to.deep.equal([lost]);
  });
});
