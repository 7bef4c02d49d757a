import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { rmSync } from 'node:fs';
import { deliverMessage, queueMessage } from '../../commands/deliver-webhooks/webhook-delivery.handler.js';
import { deleteWebhook, reactivateWebhook, registerWebhook, sendTestDelivery } from '../../commands/manage-webhooks/webhooks.handler.js';
import { webhookDeliveries, webhookRetries, webhooks } from '../../projections/webhooks/webhooks.projection.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import type { DeliveryResult, WebhookRequest, WebhookSender } from '../../src/core/webhook-sender.port.js';
import { liveEnvelope, scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';
import { SIGNING_STATEMENT } from '../../src/domain/webhooks/webhook-signing.js';
import { WEBHOOK_REGISTRY_STREAM } from '../../src/domain/webhooks/webhook.events.js';
import { tempDir, testEnv } from '../support/server.js';

/** The port, faked: keeps every request and answers with the next queued result (204 by default). */
class FakeSender implements WebhookSender {
  readonly received: WebhookRequest[] = [];
  readonly answers: Partial<DeliveryResult>[] = [];
  /** Hosts whose addresses the rules refuse, and why. */
  readonly refused = new Map<string, string>();
  async refusal(url: string): Promise<string | null> {
    return this.refused.get(new URL(url).hostname) ?? null;
  }
  async send(request: WebhookRequest): Promise<DeliveryResult> {
    this.received.push(request);
    const a = this.answers.shift() ?? {};
    return { ok: a.ok ?? true, status_code: a.status_code === undefined ? 204 : a.status_code, error: a.error ?? null, delivered_to: '203.0.113.7' };
  }
}

const refusal = async (p: Promise<unknown>): Promise<AppError> => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(AppError);
  return err as AppError;
};

describe('Webhook commands over the SQLite store', function () {
  this.timeout(60_000);
  let dir: string;
  let services: Services;
  const clock = fixedClock('2024-03-01T12:00:00.000Z');
  const sender = new FakeSender();
  const deps = () => ({ events: services.events, clock, ids: services.ids, personal: services.personal, sender });

  before(async () => {
    dir = tempDir('scores-webhooks-');
    services = await openServices(loadConfig(testEnv(dir, '2024-03-01T12:00:00Z', { SCORES_DEMO: 'off' })), { clock });
    await services.runner.start();
  });
  after(async () => {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses at registration a host that resolves to a forbidden address, writing nothing', async () => {
    sender.refused.set('internal.example.com', 'address 10.0.0.5 is private');
    const head = await services.events.headPosition();
    const err = await refusal(registerWebhook(deps(), { accountId: 'acct_private', eventType: 'score_move', url: 'https://internal.example.com/hook' }));
    expect(err.code).to.equal('bad_request');
    expect(err.detail).to.equal('webhook URL refused: address 10.0.0.5 is private');
    expect(await services.events.headPosition()).to.equal(head);
  });

  it('registers a webhook that the read model then lists, and shows its secret once', async () => {
    const hook = await registerWebhook(deps(), { accountId: 'acct_reg', eventType: 'divergence_event', url: 'https://hooks.example.com/in' });
    expect(hook).to.include({ event_type: 'divergence_event', url: 'https://hooks.example.com/in', signing: SIGNING_STATEMENT });
    expect(hook.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await services.runner.waitForHead();
    const listed = await services.reads.find(webhooks, { account_id: 'acct_reg', deleted: false }, { sort: [['id', 1]] });
    expect(listed.items.map((w) => ({ id: w.id, url: w.url, is_active: w.is_active, last_fired_at: w.last_fired_at }))).to.deep.equal([
      { id: hook.id, url: 'https://hooks.example.com/in', is_active: true, last_fired_at: null },
    ]);
    expect(JSON.stringify(listed.items)).not.to.include(hook.secret);
  });

  it('sends a signed test delivery and records it as an attempt', async () => {
    const hook = await registerWebhook(deps(), { accountId: 'acct_test', eventType: 'score_move', url: 'https://hooks.example.com/test' });
    clock.advance(1_000);
    const out = await sendTestDelivery(deps(), 'acct_test', hook.id);
    const request = sender.received[sender.received.length - 1]!;
    expect(out).to.deep.include({ ok: true, status_code: 204, error: null, delivered_to: 'https://hooks.example.com/test', signature_header: 'X-Service-Signature' });
    expect(out.payload).to.include({ test: true, source: 'scores-service' });
    // The exact bytes the receiver got are the payload, signed with the secret shown at registration.
    expect(request.url).to.equal('https://hooks.example.com/test');
    expect(request.body).to.equal(JSON.stringify(out.payload));
    expect(request.headers['x-service-signature']).to.equal(createHmac('sha256', hook.secret).update(request.body).digest('hex'));
    const key = Buffer.from(hook.secret.slice('whsec_'.length), 'base64');
    const id = request.headers['webhook-id']!;
    const ts = request.headers['webhook-timestamp']!;
    expect(request.headers['webhook-signature']).to.equal(`v1,${createHmac('sha256', key).update(`${id}.${ts}.${request.body}`).digest('base64')}`);
    expect(id).to.match(/^msg_/);

    await services.runner.waitForHead();
    const deliveries = await services.reads.find(webhookDeliveries, { webhook_id: hook.id }, { sort: [['created_at', -1]], limit: 50 });
    expect(deliveries.items).to.deep.equal([
      {
        webhook_id: hook.id,
        account_id: 'acct_test',
        message_id: id,
        kind: 'test',
        event_type: 'score_move',
        event_count: 1,
        attempt: 1,
        ok: true,
        status_code: 204,
        error: null,
        created_at: clock.now().toISOString(),
      },
    ]);
    expect(await services.reads.get(webhooks, String(hook.id))).to.include({ last_fired_at: clock.now().toISOString() });
  });

  it("answers 404 for another account's webhook, and for a deleted one", async () => {
    const hook = await registerWebhook(deps(), { accountId: 'acct_own', eventType: 'score_move', url: 'https://hooks.example.com/own' });
    expect((await refusal(sendTestDelivery(deps(), 'acct_other', hook.id))).code).to.equal('not_found');
    expect((await refusal(deleteWebhook(deps(), 'acct_other', hook.id))).code).to.equal('not_found');
    expect(await deleteWebhook(deps(), 'acct_own', hook.id)).to.deep.equal({ ok: true });
    expect((await refusal(deleteWebhook(deps(), 'acct_own', hook.id))).code).to.equal('not_found');
    expect((await refusal(sendTestDelivery(deps(), 'acct_own', hook.id))).code).to.equal('not_found');
    await services.runner.waitForHead();
    expect(await services.reads.get(webhooks, String(hook.id))).to.include({ deleted: true, is_active: false });
  });

  it('never lets concurrent registrations of one account exceed 10', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 15 }, (_, i) => registerWebhook(deps(), { accountId: 'acct_race', eventType: 'score_move', url: `https://hooks.example.com/${i}` })),
    );
    const ok = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(ok).to.have.length(10);
    expect(refused).to.have.length(5);
    for (const r of refused) expect(r).to.be.instanceOf(AppError).and.to.include({ code: 'limit_exceeded' });
    const ids = ok.map((o) => (o as PromiseFulfilledResult<{ id: number }>).value.id);
    expect(new Set(ids).size).to.equal(10);
    const assigned = (await services.events.readStream(WEBHOOK_REGISTRY_STREAM)).filter((e) => (e.data as { account_id: string }).account_id === 'acct_race');
    expect(assigned).to.have.length(10);
    await services.runner.waitForHead();
    expect(await services.reads.count(webhooks, { account_id: 'acct_race', deleted: false })).to.equal(10);
  });

  it('delivers a queued message with the same bytes on every attempt, fresh headers each time', async () => {
    const hook = await registerWebhook(deps(), { accountId: 'acct_live', eventType: 'score_move', url: 'https://hooks.example.com/live' });
    const envelope = liveEnvelope([scoreMoveEvent({ ticker: 'AAPL', date: '2024-02-29', service_score: 70.1, prior_score: 55.5 })], clock.now());
    const messageId = (await queueMessage(deps(), hook.id, envelope))!;
    expect(messageId).to.match(/^msg_/);
    await services.runner.waitForHead();
    expect(await services.reads.get(webhookRetries, messageId)).to.include({ attempts: 0 });

    const before = sender.received.length;
    sender.answers.push({ ok: false, status_code: 503, error: 'receiver answered 503' });
    expect(await deliverMessage(deps(), hook.id, messageId)).to.deep.equal({ ok: false, status_code: 503, error: 'receiver answered 503' });
    await services.runner.waitForHead();
    expect(await services.reads.get(webhookRetries, messageId)).to.include({ attempts: 1, next_attempt_at: new Date(clock.now().getTime() + 5_000).toISOString() });

    clock.advance(5_000);
    expect(await deliverMessage(deps(), hook.id, messageId)).to.deep.include({ ok: true });
    expect(await deliverMessage(deps(), hook.id, messageId)).to.equal(null);
    const [first, second] = sender.received.slice(before);
    expect(sender.received.length - before).to.equal(2);
    expect(second!.body).to.equal(first!.body);
    expect(JSON.parse(first!.body)).to.deep.equal(envelope);
    expect(second!.headers['webhook-id']).to.equal(messageId);
    expect(second!.headers['webhook-timestamp']).not.to.equal(first!.headers['webhook-timestamp']);

    await services.runner.waitForHead();
    expect(await services.reads.get(webhookRetries, messageId)).to.equal(null);
    const attempts = await services.reads.find(webhookDeliveries, { webhook_id: hook.id }, { sort: [['created_at', -1]] });
    expect(attempts.items.map((a) => [a.attempt, a.ok])).to.deep.equal([
      [2, true],
      [1, false],
    ]);
  });

  it('signs, dates and retries on the transport clock while the data clock stays pinned a week back', async () => {
    const transport = fixedClock('2024-03-08T12:00:00.000Z');
    const two = () => ({ ...deps(), transportClock: transport });
    const registeredAt = clock.now().toISOString();
    const hook = await registerWebhook(two(), { accountId: 'acct_clocks', eventType: 'score_move', url: 'https://hooks.example.com/clocks' });
    const test = await sendTestDelivery(two(), 'acct_clocks', hook.id);
    expect(test.payload.sent_at).to.equal('2024-03-08T12:00:00.000Z');
    expect(sender.received.at(-1)!.headers['webhook-timestamp']).to.equal(String(Date.parse('2024-03-08T12:00:00Z') / 1000));

    const envelope = liveEnvelope([scoreMoveEvent({ ticker: 'NVDA', date: '2024-02-29', service_score: 80, prior_score: 60 })], transport.now());
    const messageId = (await queueMessage(two(), hook.id, envelope))!;
    sender.answers.push({ ok: false, status_code: 503, error: 'receiver answered 503' });
    transport.advance(1_000);
    await deliverMessage(two(), hook.id, messageId);
    expect(sender.received.at(-1)!.headers['webhook-timestamp']).to.equal(String(Date.parse('2024-03-08T12:00:01Z') / 1000));
    await services.runner.waitForHead();
    expect(await services.reads.get(webhookRetries, messageId)).to.include({ attempts: 1, next_attempt_at: '2024-03-08T12:00:06.000Z' });
    // The retry comes due as real time passes, the data clock never moving.
    expect(await deliverMessage(two(), hook.id, messageId)).to.equal(null);
    transport.advance(5_000);
    expect(await deliverMessage(two(), hook.id, messageId)).to.deep.include({ ok: true });
    expect(sender.received.at(-1)!.headers['webhook-timestamp']).to.equal(String(Date.parse('2024-03-08T12:00:06Z') / 1000));
    await services.runner.waitForHead();
    const doc = (await services.reads.get(webhooks, String(hook.id)))!;
    expect(doc.last_fired_at).to.equal('2024-03-08T12:00:06.000Z');
    // What the customer did (the registration) is on the data clock.
    expect(doc.created_at).to.equal(registeredAt);
  });

  it('reactivates a webhook a 410 deactivated', async () => {
    const hook = await registerWebhook(deps(), { accountId: 'acct_gone', eventType: 'score_move', url: 'https://hooks.example.com/gone' });
    const envelope = liveEnvelope([scoreMoveEvent({ ticker: 'MSFT', date: '2024-02-29', service_score: 40, prior_score: 52 })], clock.now());
    const messageId = (await queueMessage(deps(), hook.id, envelope))!;
    sender.answers.push({ ok: false, status_code: 410, error: 'receiver answered 410' });
    await deliverMessage(deps(), hook.id, messageId);
    expect(await queueMessage(deps(), hook.id, envelope)).to.equal(null);
    await services.runner.waitForHead();
    expect(await services.reads.get(webhooks, String(hook.id))).to.include({ is_active: false, consecutive_failures: 1 });

    expect((await refusal(reactivateWebhook(deps(), 'acct_other', hook.id))).code).to.equal('not_found');
    expect(await reactivateWebhook(deps(), 'acct_gone', hook.id)).to.deep.equal({ id: hook.id, is_active: true, reactivated: true });
    expect(await reactivateWebhook(deps(), 'acct_gone', hook.id)).to.deep.equal({ id: hook.id, is_active: true, reactivated: false });
    await services.runner.waitForHead();
    expect(await services.reads.get(webhooks, String(hook.id))).to.include({ is_active: true, consecutive_failures: 0 });
  });
});
