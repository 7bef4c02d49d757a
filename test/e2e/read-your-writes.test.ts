/**
 * Read your own writes (docs/scaling.md, "Read your own writes on any replica"), on one embedded
 * process whose projector is paused: a webhook read that follows a write of the same account waits
 * until the webhooks read model holds it, and no longer than the bound. test/fleet/read-your-writes.test.ts
 * checks the same across two API processes on the engines.
 */
import { expect } from 'chai';
import { READ_YOUR_WRITES_MS } from '../../queries/shared/read-your-writes.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

const NOW = '2019-01-10T12:00:00Z';
/** How long the projector stays paused while a read waits. */
const PAUSE_MS = 400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Read your own writes: webhook reads wait for the read model (embedded, projector paused)', function () {
  this.timeout(120_000);
  let server: TestServer;
  let quant = '';
  let other = '';

  before(async () => {
    // Port 9 on loopback refuses at once: a test delivery fails fast and is recorded all the same.
    server = await startTestServer({ now: NOW, env: { WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
    quant = demoKey(server.dir, 'quant');
    other = demoKey(server.dir, 'enterprise');
  });
  after(() => server?.stop());

  async function call(method: string, path: string, key = quant, json?: unknown): Promise<{ status: number; body: Record<string, any>; ms: number }> {
    const started = performance.now();
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'X-API-Key': key, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : {}, ms: performance.now() - started };
  }

  /** `write` with the projector stopped, then `read`, started before the projector resumes `PAUSE_MS` later. */
  async function whilePaused<T>(write: () => Promise<unknown>, read: () => Promise<T>): Promise<T> {
    await server.services.runner.stop();
    let answer: Promise<T>;
    try {
      await write();
      answer = read();
      await sleep(PAUSE_MS);
    } finally {
      await server.services.runner.start();
    }
    return answer;
  }

  let id = 0;

  it('GET /v1/webhooks answers with a webhook registered a moment ago, once the projector has it', async () => {
    const listed = await whilePaused(
      async () => {
        const r = await call('POST', '/v1/webhooks', quant, { event_type: 'score_move', url: 'https://127.0.0.1:9/hook' });
        expect(r.status, JSON.stringify(r.body)).to.equal(201);
        id = r.body['id'] as number;
      },
      () => call('GET', '/v1/webhooks'),
    );
    console.log(`      list after a registration: ${listed.ms.toFixed(0)} ms (projector paused ${PAUSE_MS} ms)`);
    expect(listed.status).to.equal(200);
    expect(listed.body['webhooks'].map((w: { id: number }) => w.id)).to.include(id);
    expect(listed.ms).to.be.at.least(PAUSE_MS - 50);
  });

  it('lists a test delivery made a moment ago in its deliveries', async () => {
    const deliveries = await whilePaused(
      async () => expect((await call('POST', `/v1/webhooks/${id}/test`, quant, {})).status).to.equal(200),
      () => call('GET', `/v1/webhooks/${id}/deliveries`),
    );
    console.log(`      deliveries after a test delivery: ${deliveries.ms.toFixed(0)} ms`);
    expect(deliveries.body).to.deep.include({ count: 1 });
    expect(deliveries.body['deliveries'][0]).to.include({ kind: 'test', ok: false });
  });

  it('does not make another account wait for these writes', async () => {
    await server.services.runner.stop();
    let waiting = true;
    let mine: ReturnType<typeof call> | undefined;
    try {
      expect((await call('POST', `/v1/webhooks/${id}/test`, quant, {})).status).to.equal(200);
      mine = call('GET', `/v1/webhooks/${id}/deliveries`);
      void mine.finally(() => (waiting = false));
      const theirs = await call('GET', '/v1/webhooks', other);
      expect(theirs.body).to.deep.equal({ webhooks: [] });
      // Answered before the read of the account that wrote, which waits for the paused projector.
      expect(waiting, 'the writer’s own read still waiting when the other account is answered').to.equal(true);
    } finally {
      await server.services.runner.start();
    }
    expect((await mine).body).to.deep.include({ count: 2 });
  });

  it('no longer lists a webhook deleted a moment ago', async () => {
    const listed = await whilePaused(
      async () => expect((await call('DELETE', `/v1/webhooks/${id}`)).status).to.equal(200),
      () => call('GET', '/v1/webhooks'),
    );
    console.log(`      list after a deletion: ${listed.ms.toFixed(0)} ms`);
    expect(listed.body['webhooks'].map((w: { id: number }) => w.id)).not.to.include(id);
  });

  it(`answers with what the read model holds once ${READ_YOUR_WRITES_MS} ms have passed`, async () => {
    await server.services.runner.stop();
    try {
      const r = await call('POST', '/v1/webhooks', quant, { event_type: 'score_move', url: 'https://127.0.0.1:9/late' });
      expect(r.status).to.equal(201);
      const listed = await call('GET', '/v1/webhooks');
      console.log(`      list with the projector stopped: ${listed.ms.toFixed(0)} ms`);
      expect(listed.status).to.equal(200);
      expect(listed.body['webhooks'].map((w: { id: number }) => w.id)).not.to.include(r.body['id']);
      expect(listed.ms, 'waited for the bound before answering').to.be.at.least(READ_YOUR_WRITES_MS - 50);
    } finally {
      await server.services.runner.start();
    }
  });
});
