/**
 * Issue 47, item 3: resending webhook deliveries over the API, against a running server and a
 * real HTTPS receiver. A resend goes under the message's own id, signed at the sending time; one
 * per `Idempotency-Key`, also when two processes on one log get the same request; another
 * account's delivery is 404; a delivery older than 30 days (the server's transport clock moved
 * by hand, never raced) is 410 `delivery_expired`.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { resendDeliveries } from '../../commands/manage-webhooks/webhooks.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { until } from '../support/processes.js';
import { startSwitchableReceiver, type ReceivedDelivery, type SwitchableReceiver } from '../support/receiver-certificate.js';
import { getJson, startTestServer, tempDir, testEnv, wallClockPlus, type TestServer } from '../support/server.js';

const NOW = '2019-06-14T12:00:00Z';
const DAY = 86_400_000;
/** Two passes of the dispatcher's look for due messages (every second): what a second copy would need to arrive. */
const SETTLE_MS = 2_500;

describe('Webhook resend over the API', function () {
  this.timeout(120_000);
  let server: TestServer;
  let receiver: SwitchableReceiver;
  let certDir: string;
  let dir: string;
  let extra: Record<string, string>;
  const wall = wallClockPlus();
  let key = '';
  let otherKey = '';
  let accountId = '';
  let hook = 0;
  let secret = '';
  /** The test delivery's message id and body, as the receiver took them. */
  let messageId = '';
  let original: ReceivedDelivery;

  const post = async (path: string, json: unknown, apiKey = key, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const arrivals = (id: string) => receiver.received.filter((d) => d.headers['webhook-id'] === id);
  const resentEvents = async (request: string) =>
    (await server.services.events.readStream(webhookStream(hook))).filter((e) => e.type === 'WebhookMessagesResent' && (e.data as { request: string }).request === request);
  /** Waits for `n` arrivals of `id`, then long enough for another one to have come; answers how many came. */
  const settled = async (id: string, n: number) => {
    await until(() => arrivals(id).length >= n, 10_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return arrivals(id).length;
  };

  before(async () => {
    certDir = tempDir('scores-resend-cert-');
    dir = tempDir('scores-resend-');
    receiver = await startSwitchableReceiver(certDir);
    extra = { SCORES_DEMO: 'off', WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' };
    server = await startTestServer({ now: NOW, dir, transportClock: wall, env: extra });
    const s = server.services;
    const mine = await createAccountWithKey(s, { tier: 'quant' });
    key = mine.key;
    accountId = mine.account_id;
    otherKey = (await createAccountWithKey(s, { tier: 'quant' })).key;
    await s.runner.waitForHead();
    const registered = await post('/v1/webhooks', { event_type: 'score_move', url: `https://localhost:${receiver.port}/hooks` });
    expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
    hook = registered.body['id'] as number;
    secret = registered.body['secret'] as string;
    const tested = await post(`/v1/webhooks/${hook}/test`, undefined);
    expect(tested.body['ok']).to.equal(true);
    original = receiver.received.at(-1)!;
    messageId = String(original.headers['webhook-id']);
  });

  after(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(certDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists each attempt with its message id, the delivery_id a resend names', async () => {
    const listed = await getJson(`${server.url}/v1/webhooks/${hook}/deliveries`, key);
    expect(listed.body['deliveries'][0]).to.deep.include({ message_id: messageId, attempt: 1, kind: 'test', ok: true });
  });

  it('resends once per Idempotency-Key: the same request twice is one delivery, under the original id, with the same body, signed when sent', async () => {
    const path = `/v1/webhooks/${hook}/deliveries/${messageId}/resend`;
    const first = await post(path, undefined, key, { 'Idempotency-Key': 'again-1' });
    const second = await post(path, undefined, key, { 'Idempotency-Key': 'again-1' });
    expect(first.status, JSON.stringify(first.body)).to.equal(202);
    expect(first.body).to.deep.include({ webhook_id: hook, message_ids: [messageId], count: 1, since: null, idempotency_key: 'again-1', replayed: false });
    expect(second.status).to.equal(202);
    expect(second.body).to.deep.equal({ ...first.body, replayed: true });
    expect(await settled(messageId, 2), 'the test, then one resend').to.equal(2);
    expect(await resentEvents('again-1')).to.have.length(1);

    const resent = arrivals(messageId)[1]!;
    expect(resent.body, 'the same bytes').to.equal(original.body);
    // The reference verifier judges the timestamp against this machine's clock: signed at the sending time.
    new Webhook(secret).verify(resent.body, resent.headers as Record<string, string>);
    expect(Number(resent.headers['webhook-timestamp'])).to.be.at.least(Number(original.headers['webhook-timestamp']));
    const listed = await getJson(`${server.url}/v1/webhooks/${hook}/deliveries`, key);
    expect(listed.body['deliveries'].filter((d: { message_id: string }) => d.message_id === messageId).map((d: { attempt: number; ok: boolean }) => [d.attempt, d.ok])).to.deep.equal([
      [2, true],
      [1, true],
    ]);
  });

  it('resends once when the same request reaches two servers of one log at the same moment', async () => {
    // A second process on the same store: another replica the request could reach.
    const replica: Services = await openServices(loadConfig(testEnv(dir, NOW, extra)), { transportClock: wall });
    try {
      const before = arrivals(messageId).length;
      const rounds = 4;
      for (let i = 0; i < rounds; i++) {
        const request = `replicas-${i}`;
        const answers = await Promise.all([server.services, replica].map((s) => resendDeliveries(s, accountId, hook, { message_id: messageId }, request)));
        expect(answers.map((a) => a.replayed).sort(), request).to.deep.equal([false, true]);
        expect(answers[0]!.message_ids).to.deep.equal(answers[1]!.message_ids);
        expect(await resentEvents(request), request).to.have.length(1);
        // Sent before the next round: a message owed twice at once is owed once.
        await until(() => arrivals(messageId).length >= before + i + 1, 10_000);
      }
      expect(await settled(messageId, before + rounds)).to.equal(before + rounds);
    } finally {
      await replica.close();
    }
  });

  it("refuses another account's webhook or delivery with 404, and sends nothing", async () => {
    const before = (await server.services.events.readStream(webhookStream(hook))).length;
    const theirs = await post(`/v1/webhooks/${hook}/deliveries/${messageId}/resend`, undefined, otherKey);
    expect(theirs.status).to.equal(404);
    expect(theirs.body['code']).to.equal('not_found');
    // Their own webhook, naming our delivery: not one of theirs either.
    const own = await post('/v1/webhooks', { event_type: 'score_move', url: `https://localhost:${receiver.port}/other` }, otherKey);
    const cross = await post(`/v1/webhooks/${own.body['id']}/deliveries/${messageId}/resend`, undefined, otherKey);
    expect(cross.status).to.equal(404);
    expect((await post(`/v1/webhooks/${hook}/resend-failed`, { since: '2019-06-01T00:00:00Z' }, otherKey)).status).to.equal(404);
    expect((await server.services.events.readStream(webhookStream(hook))).length).to.equal(before);
  });

  it('resends every failed delivery since an instant, once per key', async () => {
    receiver.status = 503;
    const failed = await post(`/v1/webhooks/${hook}/test`, undefined);
    expect(failed.body).to.deep.include({ ok: false, status_code: 503 });
    const failedId = String(receiver.received.at(-1)!.headers['webhook-id']);
    receiver.status = 204;
    const listed = await getJson(`${server.url}/v1/webhooks/${hook}/deliveries`, key);
    const since = (listed.body['deliveries'] as { message_id: string; created_at: string }[]).find((d) => d.message_id === failedId)!.created_at;
    const body = { since };
    const first = await post(`/v1/webhooks/${hook}/resend-failed`, body, key, { 'Idempotency-Key': 'back-up-1' });
    expect(first.status, JSON.stringify(first.body)).to.equal(202);
    expect(first.body).to.deep.include({ message_ids: [failedId], count: 1, since, replayed: false });
    expect((await post(`/v1/webhooks/${hook}/resend-failed`, body, key, { 'Idempotency-Key': 'back-up-1' })).body).to.deep.include({ message_ids: [failedId], replayed: true });
    expect(await settled(failedId, 2), 'the failed test, then one resend').to.equal(2);
    // Nothing failed since: nothing to resend.
    expect((await post(`/v1/webhooks/${hook}/resend-failed`, body)).body).to.deep.include({ message_ids: [], count: 0 });
  });

  it('resends a delivery for 30 days from when it was made, then answers 410 delivery_expired', async () => {
    const made = (await getJson(`${server.url}/v1/webhooks/${hook}/deliveries`, key)).body['deliveries'].find((d: { message_id: string; attempt: number }) => d.message_id === messageId && d.attempt === 1)
      .created_at as string;
    const path = `/v1/webhooks/${hook}/deliveries/${messageId}/resend`;
    try {
      // The test was made a moment before its attempt was recorded: 30 days less a minute after the attempt is inside the 30 days.
      wall.advance(Date.parse(`${made.replace(' ', 'T')}Z`) + 30 * DAY - 60_000 - Date.now());
      expect((await post(path, undefined)).status).to.equal(202);
      wall.advance(2 * 60_000);
      const expired = await post(path, undefined);
      expect(expired.status).to.equal(410);
      expect(expired.body).to.include({ code: 'delivery_expired', status: 410 });
      expect(Date.parse(expired.body['made_at'] as string)).to.be.within(Date.parse(`${made.replace(' ', 'T')}Z`) - 2_000, Date.parse(`${made.replace(' ', 'T')}Z`) + 1_000);
    } finally {
      wall.advance(-(wall.now().getTime() - Date.now()));
    }
  });
});
