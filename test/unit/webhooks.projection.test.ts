import { expect } from 'chai';
import { webhookDeliveries, webhookRetries, webhooks, webhooksProjection } from '../../projections/webhooks/webhooks.projection.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { WEBHOOK_REGISTRY_STREAM, webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { ProjectionHarness } from '../support/projection-harness.js';
import { T0, at, attempt, decideAfter, delivered, failed, queue, register, resend, type AnyWebhookEvent, type WebhookCommand } from '../support/webhook-commands.js';



/** Drives the real deciders and records their events on their streams, as the store would. */
class World {
  private readonly decided: AnyWebhookEvent[] = [];
  readonly recorded: RecordedEvent[] = [];
  constructor(private readonly h: ProjectionHarness) {}

  run(command: WebhookCommand, now: Date): RecordedEvent[] {
    return decideAfter(this.decided, command, now).map((e) => {
      this.decided.push(e);
      const stream = e.type === 'WebhookIdAssigned' || e.type === 'WebhookIdReleased' ? WEBHOOK_REGISTRY_STREAM : webhookStream(e.data.webhook_id);
      const recorded = this.h.event(stream, e.type, e.data);
      this.recorded.push(recorded);
      return recorded;
    });
  }
}

describe('Webhooks projection', () => {
  let h: ProjectionHarness;
  let w: World;
  beforeEach(() => {
    h = new ProjectionHarness(webhooksProjection);
    w = new World(h);
  });
  const apply = async (command: WebhookCommand, now: Date) => h.apply(...w.run(command, now));

  it('writes one document per webhook, without its secret, and marks a deleted one', async () => {
    await apply(register('acct_a'), T0);
    await apply(register('acct_b'), at(1000));
    expect(await h.ctx.get(webhooks, '1')).to.deep.equal({
      id: 1,
      account_id: 'acct_a',
      event_type: 'score_move',
      url: 'https://hooks.example.com/in',
      is_active: true,
      deleted: false,
      consecutive_failures: 0,
      last_fired_at: null,
      created_at: T0.toISOString(),
      owed: [],
      revision: 0,
    });
    expect(JSON.stringify(h.snapshot())).not.to.include('whsec_');
    await apply({ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, at(2000));
    expect(await h.ctx.get(webhooks, '1')).to.include({ deleted: true, is_active: false });
    expect(await h.ctx.get(webhooks, '2')).to.include({ deleted: false, is_active: true });
  });

  it('records every attempt, live and test, and counts failures until a success', async () => {
    await apply(register('acct_a'), T0);
    await apply(queue(1, 'msg_1'), T0);
    await apply(attempt(1, 'msg_1', failed), T0);
    await apply(attempt(1, 'msg_t', failed, 'test'), at(1000));
    expect(await h.ctx.get(webhooks, '1')).to.include({ consecutive_failures: 2, last_fired_at: at(1000).toISOString() });
    await apply(attempt(1, 'msg_1', delivered), at(5000));
    expect(await h.ctx.get(webhooks, '1')).to.include({ consecutive_failures: 0, last_fired_at: at(5000).toISOString() });
    const deliveries = Object.values(h.snapshot()[webhookDeliveries.name]!);
    expect(deliveries).to.deep.equal([
      { webhook_id: 1, account_id: 'acct_a', message_id: 'msg_1', kind: 'live', event_type: 'score_move', event_count: 1, attempt: 1, ok: false, status_code: 500, error: 'receiver answered 500', created_at: T0.toISOString() },
      { webhook_id: 1, account_id: 'acct_a', message_id: 'msg_1', kind: 'live', event_type: 'score_move', event_count: 1, attempt: 2, ok: true, status_code: 204, error: null, created_at: at(5000).toISOString() },
      { webhook_id: 1, account_id: 'acct_a', message_id: 'msg_t', kind: 'test', event_type: 'score_move', event_count: 1, attempt: 1, ok: false, status_code: 500, error: 'receiver answered 500', created_at: at(1000).toISOString() },
    ]);
  });

  it('counts a failed attempt handed again (a commit cut short, then re-delivered) once', async () => {
    await apply(register('acct_a'), T0);
    await apply(queue(1, 'msg_1'), T0);
    const failedOnce = w.run(attempt(1, 'msg_1', failed), T0);
    await h.apply(...failedOnce);
    await h.apply(...failedOnce);
    expect(await h.ctx.get(webhooks, '1')).to.include({ consecutive_failures: 1 });
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.include({ attempts: 1 });
  });

  it('keeps each owed live message in webhook_retries until it is delivered', async () => {
    await apply(register('acct_a'), T0);
    await apply(queue(1, 'msg_1'), T0);
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.deep.equal({ message_id: 'msg_1', webhook_id: 1, account_id: 'acct_a', attempts: 0, next_attempt_at: T0.toISOString() });
    await apply(attempt(1, 'msg_1', failed), T0);
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.include({ attempts: 1, next_attempt_at: at(5000).toISOString() });
    await apply(attempt(1, 'msg_1', delivered), at(5000));
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.equal(null);
    expect(await h.ctx.get(webhooks, '1')).to.deep.include({ owed: [] });
  });

  it('owes a resent message again, due at once, lists its further attempts by number, and drops it once delivered', async () => {
    await apply(register('acct_a'), T0);
    await apply(queue(1, 'msg_1'), T0);
    await apply(attempt(1, 'msg_1', delivered), T0);
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.equal(null);
    await apply(resend(1, 'msg_1', 'key-1'), at(60_000));
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.deep.equal({ message_id: 'msg_1', webhook_id: 1, account_id: 'acct_a', attempts: 1, next_attempt_at: at(60_000).toISOString() });
    expect(await h.ctx.get(webhooks, '1')).to.deep.include({ owed: ['msg_1'] });
    await apply(attempt(1, 'msg_1', failed), at(61_000));
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.include({ attempts: 2, next_attempt_at: at(66_000).toISOString() });
    await apply(attempt(1, 'msg_1', delivered), at(66_000));
    expect(await h.ctx.get(webhookRetries, 'msg_1')).to.equal(null);
    expect(await h.ctx.get(webhooks, '1')).to.deep.include({ owed: [] });
    const attempts = Object.values(h.snapshot()[webhookDeliveries.name]!) as { message_id: string; attempt: number; ok: boolean }[];
    expect(attempts.map((d) => [d.message_id, d.attempt, d.ok])).to.deep.equal([
      ['msg_1', 1, true],
      ['msg_1', 2, false],
      ['msg_1', 3, true],
    ]);
  });

  it('drops the owed messages of a deactivated or deleted webhook; reactivation resets the failures', async () => {
    await apply(register('acct_a'), T0);
    await apply(register('acct_a'), T0);
    for (const id of [1, 2]) {
      await apply(queue(id, `msg_${id}a`), T0);
      await apply(queue(id, `msg_${id}b`), T0);
      await apply(attempt(id, `msg_${id}a`, failed), T0);
    }
    expect(Object.keys(h.snapshot()[webhookRetries.name]!)).to.have.length(4);
    await apply(attempt(1, 'msg_1b', { ok: false, status_code: 410, error: 'receiver answered 410' }), at(1000));
    await apply({ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 2 }, at(2000));
    expect(h.snapshot()[webhookRetries.name]).to.deep.equal({});
    expect(await h.ctx.get(webhooks, '1')).to.include({ is_active: false, consecutive_failures: 2 });
    await apply({ type: 'ReactivateWebhook', account_id: 'acct_a', webhook_id: 1 }, at(3000));
    expect(await h.ctx.get(webhooks, '1')).to.include({ is_active: true, consecutive_failures: 0 });
  });

  it('ignores the registry, streams it does not know and events of an unregistered webhook', async () => {
    await h.apply(
      h.event(WEBHOOK_REGISTRY_STREAM, 'WebhookIdAssigned', { webhook_id: 1, account_id: 'acct_a', at: T0.toISOString() }),
      h.event('webhook-x', 'WebhookRegistered', { webhook_id: 1 }),
      h.event(webhookStream(7), 'WebhookDeleted', { webhook_id: 7, at: T0.toISOString() }),
      h.event(webhookStream(7), 'WebhookDeliveryAttempted', null),
    );
    expect(Object.values(h.snapshot()).flatMap((docs) => Object.keys(docs))).to.deep.equal([]);
    expect([...h.writes.values()].reduce((a, b) => a + b, 0)).to.equal(0);
  });
});
