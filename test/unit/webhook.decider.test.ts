import { expect } from 'chai';
import { webhookDeliveryDecider, type DeliveryCommand } from '../../src/domain/webhooks/webhook-delivery.decider.js';
import { MAX_WEBHOOKS_PER_ACCOUNT, webhookRegistryDecider } from '../../src/domain/webhooks/webhook-registry.decider.js';
import { webhookDecider } from '../../src/domain/webhooks/webhook.decider.js';
import { parseAllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { liveEnvelope, scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';
import { deciderSpec } from '../support/decider-spec.js';
import {
  ENVELOPE,
  SECRET,
  T0,
  at,
  attempt,
  delivered,
  failed,
  gone,
  history,
  queue,
  register,
  webhookState,
  webhookStreamOf,
  type AnyWebhookEvent as AnyEvent,
  type WebhookCommand,
} from '../support/webhook-commands.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Expectations without the secret and the times, where those are not the point. */
const brief = (e: AnyEvent) => {
  const { at: _at, ...data } = e.data as { at: string } & Record<string, unknown>;
  delete data['secret'];
  return { type: e.type, data };
};
/** Registration, on the registry stream (given every event: the webhooks' own are not the registry's). */
const registry = deciderSpec(webhookRegistryDecider);
const registryBrief = deciderSpec(webhookRegistryDecider, { normalize: brief });
/** Deletion and reactivation, on the webhook's stream. */
const manage = deciderSpec(webhookDecider);
const manageBrief = deciderSpec(webhookDecider, { normalize: brief });
/** Queueing and attempts, on the webhook's stream. */
const delivery = deciderSpec(webhookDeliveryDecider);
const deliveryBrief = deciderSpec(webhookDeliveryDecider, { normalize: brief });
/** Webhook 1's stream among `events`. */
const one_ = (events: AnyEvent[]) => webhookStreamOf(events, 1);

const attempted = (e: AnyEvent[]) => e.filter((x) => x.type === 'WebhookDeliveryAttempted').map((x) => x.data as { attempt: number; next_attempt_at: string | null; ok: boolean });

describe('Webhook decider', () => {
  describe('When a webhook is registered', () => {
    it('gives the next id on the registry and starts the webhook stream with the URL as parsed', () => {
      registry
        .given(history([register('acct_a'), T0]))
        .when(register('acct_b', 'https://Hooks.Example.com:8443/x?y=1'), at(SECOND))
        .then([
          { type: 'WebhookIdAssigned', data: { webhook_id: 2, account_id: 'acct_b', at: at(SECOND).toISOString() } },
          {
            type: 'WebhookRegistered',
            data: { webhook_id: 2, account_id: 'acct_b', event_type: 'score_move', url: 'https://hooks.example.com:8443/x?y=1', secret: SECRET, at: at(SECOND).toISOString() },
          },
        ]);
    });

    it('refuses an unknown event type and an unsafe URL with 400', () => {
      registry.given([]).when(register('acct_a', 'https://hooks.example.com/', 'price_move'), T0).thenThrows('bad_request');
      registry.given([]).when(register('acct_a', 'http://hooks.example.com/'), T0).thenThrows('bad_request');
      registry.given([]).when(register('acct_a', 'https://10.0.0.5/'), T0).thenThrows('bad_request');
      registry.given([]).when(register('acct_a', `https://hooks.example.com/${'a'.repeat(2100)}`), T0).thenThrows('bad_request');
    });

    it('accepts an address inside the allow-list it is given', () => {
      const loopback = register('acct_a', 'https://127.0.0.1:8443/');
      registry.given([]).when(loopback, T0).thenThrows('bad_request');
      const allowed = history([{ ...loopback, allow_subnets: parseAllowSubnets('127.0.0.0/8') }, T0]);
      expect(allowed.map((e) => e.type)).to.deep.equal(['WebhookIdAssigned', 'WebhookRegistered']);
    });

    it(`refuses an account's ${MAX_WEBHOOKS_PER_ACCOUNT + 1}th live webhook with 422 limit_exceeded, other accounts unaffected`, () => {
      const ten = history(...Array.from({ length: 10 }, (_, i): [WebhookCommand, Date] => [register('acct_a'), at(i * SECOND)]));
      registry.given(ten).when(register('acct_a'), at(MINUTE)).thenThrows('limit_exceeded', (err) => expect(err.detail).to.match(/at most 10 webhooks/));
      registryBrief.given(ten).when(register('acct_b'), at(MINUTE)).then([
        { type: 'WebhookIdAssigned', data: { webhook_id: 11, account_id: 'acct_b' } },
        { type: 'WebhookRegistered', data: { webhook_id: 11, account_id: 'acct_b', event_type: 'score_move', url: 'https://hooks.example.com/in' } },
      ]);
    });

    it('allows an 11th after a delete, with a new id (ids are never given twice)', () => {
      const events = history(
        ...Array.from({ length: 10 }, (_, i): [WebhookCommand, Date] => [register('acct_a'), at(i * SECOND)]),
        [{ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 4 }, at(MINUTE)],
      );
      registryBrief.given(events).when(register('acct_a'), at(2 * MINUTE)).then([
        { type: 'WebhookIdAssigned', data: { webhook_id: 11, account_id: 'acct_a' } },
        { type: 'WebhookRegistered', data: { webhook_id: 11, account_id: 'acct_a', event_type: 'score_move', url: 'https://hooks.example.com/in' } },
      ]);
    });
  });

  describe('When a webhook is deleted', () => {
    const one = history([register('acct_a'), T0]);

    it('deletes it and releases its place on the registry', () => {
      manageBrief.given(one_(one)).when({ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, at(SECOND)).then([
        { type: 'WebhookDeleted', data: { webhook_id: 1 } },
        { type: 'WebhookIdReleased', data: { webhook_id: 1, account_id: 'acct_a' } },
      ]);
    });

    it("answers 404 alike for another account's webhook, an unknown id and a deleted one", () => {
      const details = [
        manage.given(one_(one)).when({ type: 'DeleteWebhook', account_id: 'acct_b', webhook_id: 1 }, at(SECOND)).thenThrows('not_found'),
        manage.given(webhookStreamOf(one, 9)).when({ type: 'DeleteWebhook', account_id: 'acct_b', webhook_id: 9 }, at(SECOND)).thenThrows('not_found'),
      ].map((e) => e.detail.replace(/\d+/, 'N'));
      expect(details[0]).to.equal(details[1]);
      const deleted = history([register('acct_a'), T0], [{ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, at(SECOND)]);
      manage.given(one_(deleted)).when({ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, at(MINUTE)).thenThrows('not_found');
      manage.given(one_(deleted)).when({ type: 'ReactivateWebhook', account_id: 'acct_a', webhook_id: 1 }, at(MINUTE)).thenThrows('not_found');
    });

    it('queues nothing for it and records no attempt of its messages', () => {
      const events = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [{ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, at(SECOND)]);
      delivery.given(one_(events)).when(queue(1, 'msg_2'), at(MINUTE)).then([]);
      delivery.given(one_(events)).when(attempt(1, 'msg_1', delivered), at(MINUTE)).then([]);
    });
  });

  describe('When live messages are attempted', () => {
    const queued = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0]);

    it('queues a message for an active webhook, once', () => {
      deliveryBrief.given(one_(history([register('acct_a'), T0]))).when(queue(1, 'msg_1'), T0).then([
        { type: 'WebhookMessageQueued', data: { webhook_id: 1, message_id: 'msg_1', event_type: 'score_move', envelope: ENVELOPE } },
      ]);
      delivery.given(one_(queued)).when(queue(1, 'msg_1'), T0).then([]);
    });

    it('never queues a message id twice, even after its message was delivered', () => {
      const delivered_ = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', delivered), T0]);
      delivery.given(one_(delivered_)).when(queue(1, 'msg_1'), at(MINUTE)).then([]);
    });

    it('leaves out the events queued before, with only_new_events (the dispatcher: once per ticker and date)', () => {
      const bbb = scoreMoveEvent({ ticker: 'BBB', date: '2024-02-29', service_score: 40, prior_score: 52 });
      const both = liveEnvelope([...ENVELOPE.events, bbb], T0);
      const sent = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', delivered), T0]);
      const again = (message_id: string, envelope = both): DeliveryCommand => ({ type: 'QueueMessage', webhook_id: 1, message_id, envelope, only_new_events: true });
      deliveryBrief.given(one_(sent)).when(again('msg_2'), at(MINUTE)).then([
        { type: 'WebhookMessageQueued', data: { webhook_id: 1, message_id: 'msg_2', event_type: 'score_move', envelope: { ...both, events: [bbb] } } },
      ]);
      delivery.given(one_(sent)).when(again('msg_2', ENVELOPE), at(MINUTE)).then([]);
    });

    it('numbers attempts per message and schedules each retry from the failure before it, then gives up after 8', () => {
      const steps: [WebhookCommand, Date][] = [[register('acct_a'), T0], [queue(1, 'msg_1'), T0], [queue(1, 'msg_2'), T0]];
      let now = T0.getTime();
      const delays = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
      for (let i = 0; i < 8; i++) {
        steps.push([attempt(1, 'msg_1', failed), new Date(now)]);
        now += delays[i] ?? 0;
      }
      steps.push([attempt(1, 'msg_2', failed), new Date(now)]);
      const out = attempted(history(...steps));
      expect(out.map((a) => a.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 1]);
      let t = T0.getTime();
      expect(out.slice(0, 7).map((a) => a.next_attempt_at)).to.deep.equal(delays.map((d) => new Date((t += d)).toISOString()));
      expect(out[7]!.next_attempt_at).to.equal(null);
      // Given up: a 9th attempt of msg_1 is not recorded.
      delivery.given(one_(history(...steps))).when(attempt(1, 'msg_1', delivered), new Date(now)).then([]);
    });

    it('ends a message on delivery: no next attempt, and no more attempts recorded', () => {
      const events = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', failed), T0], [attempt(1, 'msg_1', delivered), at(5 * SECOND)]);
      expect(attempted(events).map((a) => [a.attempt, a.ok, a.next_attempt_at])).to.deep.equal([
        [1, false, at(5 * SECOND).toISOString()],
        [2, true, null],
      ]);
      delivery.given(one_(events)).when(attempt(1, 'msg_1', delivered), at(MINUTE)).then([]);
    });

    it('deactivates at once on a 410, with no next attempt', () => {
      deliveryBrief.given(one_(queued)).when(attempt(1, 'msg_1', gone), at(SECOND)).then([
        {
          type: 'WebhookDeliveryAttempted',
          data: { webhook_id: 1, message_id: 'msg_1', kind: 'live', event_type: 'score_move', event_count: 1, attempt: 1, ok: false, status_code: 410, error: 'receiver answered 410', next_attempt_at: null },
        },
        { type: 'WebhookDeactivated', data: { webhook_id: 1, reason: 'gone' } },
      ]);
    });

    it('deactivates after 5 days of failures counted from the first failure after the last success', () => {
      const events = history(
        [register('acct_a'), T0],
        [queue(1, 'msg_0'), T0],
        [attempt(1, 'msg_0', delivered), T0],
        [queue(1, 'msg_1'), at(DAY)],
        [attempt(1, 'msg_1', failed), at(DAY)],
        [queue(1, 'msg_2'), at(3 * DAY)],
        [attempt(1, 'msg_2', failed), at(3 * DAY)],
        [queue(1, 'msg_3'), at(6 * DAY - SECOND)],
      );
      // 5 days after the first failure (day 1), less a second: still active.
      delivery.given(one_(events)).when(attempt(1, 'msg_3', failed), at(6 * DAY - SECOND)).then([
        {
          type: 'WebhookDeliveryAttempted',
          data: {
            webhook_id: 1,
            message_id: 'msg_3',
            kind: 'live',
            event_type: 'score_move',
            event_count: 1,
            attempt: 1,
            ok: false,
            status_code: 500,
            error: 'receiver answered 500',
            next_attempt_at: at(6 * DAY + 4 * SECOND).toISOString(),
            at: at(6 * DAY - SECOND).toISOString(),
          },
        },
      ]);
      const out = deliveryBrief.given(one_(events)).when(attempt(1, 'msg_2', failed), at(6 * DAY)).then([
        {
          type: 'WebhookDeliveryAttempted',
          data: { webhook_id: 1, message_id: 'msg_2', kind: 'live', event_type: 'score_move', event_count: 1, attempt: 2, ok: false, status_code: 500, error: 'receiver answered 500', next_attempt_at: null },
        },
        { type: 'WebhookDeactivated', data: { webhook_id: 1, reason: 'failing' } },
      ]);
      // Deactivated: its messages are dropped and nothing more is queued.
      const after = [...events, ...out];
      delivery.given(one_(after)).when(attempt(1, 'msg_3', failed), at(6 * DAY)).then([]);
      delivery.given(one_(after)).when(queue(1, 'msg_4'), at(6 * DAY)).then([]);
    });

    it('lets a success end the failure run', () => {
      const events = history(
        [register('acct_a'), T0],
        [queue(1, 'msg_1'), T0],
        [attempt(1, 'msg_1', failed), T0],
        [attempt(1, 'msg_1', delivered), at(5 * SECOND)],
        [queue(1, 'msg_2'), at(5 * DAY)],
      );
      expect(webhookDeliveryDecider.decide(webhookState(events, 1), attempt(1, 'msg_2', failed), at(5 * DAY)).map((e) => e.type)).to.deep.equal([
        'WebhookDeliveryAttempted',
      ]);
    });
  });

  describe('When a test delivery is recorded', () => {
    it('records attempt 1 with no retry, and never deactivates (not even on a 410), on an active or inactive webhook', () => {
      const one = history([register('acct_a'), T0]);
      deliveryBrief.given(one_(one)).when(attempt(1, 'msg_t', gone, 'test'), at(SECOND)).then([
        {
          type: 'WebhookDeliveryAttempted',
          data: { webhook_id: 1, message_id: 'msg_t', kind: 'test', event_type: 'score_move', event_count: 1, attempt: 1, ok: false, status_code: 410, error: 'receiver answered 410', next_attempt_at: null },
        },
      ]);
      const failingLong = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', failed), T0]);
      const types = (events: AnyEvent[]) => events.map((e) => e.type);
      expect(types(webhookDeliveryDecider.decide(webhookState(failingLong, 1), attempt(1, 'msg_t', failed, 'test'), at(6 * DAY)))).to.deep.equal([
        'WebhookDeliveryAttempted',
      ]);
    });

    it('counts a failed test in consecutive_failures without starting the 5-day run; a successful test ends the run', () => {
      let state = webhookState(history([register('acct_a'), T0], [attempt(1, 'msg_t1', failed, 'test'), T0]), 1);
      expect(state).to.include({ consecutive_failures: 1, first_failure_at: null, last_fired_at: T0.toISOString() });
      state = webhookState(history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', failed), T0], [attempt(1, 'msg_t2', delivered, 'test'), at(DAY)]), 1);
      expect(state).to.include({ consecutive_failures: 0, first_failure_at: null });
      expect(state.messages.get('msg_1')).to.include({ attempts: 1 });
    });
  });

  describe('When a webhook is reactivated', () => {
    const deactivated = history([register('acct_a'), T0], [queue(1, 'msg_1'), T0], [attempt(1, 'msg_1', gone), T0]);

    it('reactivates a deactivated webhook of the account and resets its failure run', () => {
      const events = manage.given(one_(deactivated)).when({ type: 'ReactivateWebhook', account_id: 'acct_a', webhook_id: 1 }, at(DAY)).then([
        { type: 'WebhookReactivated', data: { webhook_id: 1, at: at(DAY).toISOString() } },
      ]);
      const state = webhookState([...deactivated, ...events], 1);
      expect(state).to.include({ is_active: true, consecutive_failures: 0, first_failure_at: null });
      deliveryBrief.given(one_([...deactivated, ...events])).when(queue(1, 'msg_2'), at(DAY)).then([
        { type: 'WebhookMessageQueued', data: { webhook_id: 1, message_id: 'msg_2', event_type: 'score_move', envelope: ENVELOPE } },
      ]);
    });

    it("changes nothing on an active webhook and answers 404 for another account's", () => {
      manage.given(one_(history([register('acct_a'), T0]))).when({ type: 'ReactivateWebhook', account_id: 'acct_a', webhook_id: 1 }, at(DAY)).then([]);
      manage.given(one_(deactivated)).when({ type: 'ReactivateWebhook', account_id: 'acct_b', webhook_id: 1 }, at(DAY)).thenThrows('not_found');
    });
  });
});
