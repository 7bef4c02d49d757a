import { expect } from 'chai';
import { webhookDeliveryDecider } from '../../src/domain/webhooks/webhook-delivery.decider.js';
import { RESEND_WINDOW_MS, webhookResendDecider, type ResendCommand, type ResendOutcome } from '../../src/domain/webhooks/webhook-resend.decider.js';
import { testEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import type { WebhookDeliveryAttempted } from '../../src/domain/webhooks/webhook.events.js';
import type { RecordAttempt } from '../../src/domain/webhooks/webhook-attempt.js';
import { deciderSpec } from '../support/decider-spec.js';
import {
  ENVELOPE,
  T0,
  at,
  attempt,
  decideAfter,
  delivered,
  failed,
  history,
  queue,
  register,
  resend,
  resendFailed,
  webhookState,
  webhookStreamOf,
  type AnyWebhookEvent,
} from '../support/webhook-commands.js';

const SECOND = 1_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const spec = deciderSpec(webhookResendDecider);
/** Webhook 1's stream among `events`: what the decider is given. */
const one = (events: AnyWebhookEvent[]) => webhookStreamOf(events, 1);
const attempts = (events: AnyWebhookEvent[]) => events.filter((e): e is WebhookDeliveryAttempted => e.type === 'WebhookDeliveryAttempted').map((e) => e.data);
/** What a resend answers, decided after `events`. */
const outcome = (events: AnyWebhookEvent[], command: ResendCommand, now: Date): ResendOutcome => {
  const decided = webhookResendDecider.decide(webhookState(events, command.webhook_id), command, now);
  return (decided as { result: ResendOutcome }).result;
};

/** Webhook 1 of acct_a: msg_ok delivered at once, msg_bad failed twice (a retry due), both live. */
const base = () =>
  history(
    [register('acct_a'), T0],
    [queue(1, 'msg_ok'), T0],
    [attempt(1, 'msg_ok', delivered), at(SECOND)],
    [queue(1, 'msg_bad'), at(HOUR)],
    [attempt(1, 'msg_bad', failed), at(HOUR + SECOND)],
    [attempt(1, 'msg_bad', failed), at(HOUR + 6 * SECOND)],
  );

describe('Webhook resend decider', () => {
  it('owes a delivered message again under its own id, its attempts numbered on and retried by the schedule from this round', () => {
    const events = base();
    const later = at(2 * DAY);
    spec
      .given(one(events))
      .when(resend(1, 'msg_ok', 'key-1'), later)
      .then([{ type: 'WebhookMessagesResent', data: { webhook_id: 1, request: 'key-1', since: null, messages: [{ message_id: 'msg_ok', attempts_before: 1 }], at: later.toISOString() } }]);
    const after = [...events, ...decideAfter(events, resend(1, 'msg_ok', 'key-1'), later)];
    expect(webhookState(after, 1).messages.get('msg_ok')).to.deep.include({ kind: 'live', attempts: 1, resent_after: 1, next_attempt_at: later.toISOString(), envelope: ENVELOPE });
    // The resend's first attempt is attempt 2 of the message; failed, its retry comes 5 s later, as a new message's second attempt would.
    const failedAgain = webhookDeliveryDecider.decide(webhookState(after, 1), attempt(1, 'msg_ok', failed), later);
    expect(attempts(failedAgain)).to.deep.equal([
      { ...attempts(failedAgain)[0]!, attempt: 2, ok: false, next_attempt_at: new Date(later.getTime() + 5 * SECOND).toISOString() },
    ]);
  });

  it('resends once per idempotency key: the same request again answers the same, replayed, and decides nothing', () => {
    const events = base();
    const first = [...events, ...decideAfter(events, resend(1, 'msg_bad', 'key-1'), at(DAY))];
    spec.given(one(first)).when(resend(1, 'msg_bad', 'key-1'), at(DAY + SECOND)).then([]);
    expect(outcome(first, resend(1, 'msg_bad', 'key-1'), at(DAY + SECOND))).to.deep.equal({ request: 'key-1', since: null, message_ids: ['msg_bad'], at: at(DAY).toISOString(), replayed: true });
    // Another key is another request: it resends again.
    expect(decideAfter(first, resend(1, 'msg_bad', 'key-2'), at(DAY + SECOND)).map((e) => e.type)).to.deep.equal(['WebhookMessagesResent']);
  });

  it('refuses a key used for another resend of the webhook with 409, and a deactivated webhook with 409', () => {
    const events = [...base(), ...decideAfter(base(), resend(1, 'msg_bad', 'key-1'), at(DAY))];
    spec.given(one(events)).when(resend(1, 'msg_ok', 'key-1'), at(DAY)).thenThrows('conflict');
    spec.given(one(events)).when(resendFailed(1, T0, 'key-1'), at(DAY)).thenThrows('conflict');
    const gone = [...base(), { type: 'WebhookDeactivated' as const, data: { webhook_id: 1, reason: 'gone' as const, at: at(DAY).toISOString() } }];
    spec.given(one(gone)).when(resend(1, 'msg_ok', 'key-9'), at(DAY)).thenThrows('conflict', (err) => expect(err.message).to.match(/enable it/));
  });

  it("answers 404 for another account's webhook and for a message the webhook was never sent", () => {
    spec.given(one(base())).when(resend(1, 'msg_ok', 'key-1', 'acct_b'), at(DAY)).thenThrows('not_found');
    spec.given(one(base())).when(resend(1, 'msg_other', 'key-1'), at(DAY)).thenThrows('not_found');
    // Webhook 2's stream (it has none): nothing of webhook 1's is found there.
    expect(() => decideAfter(base(), resend(2, 'msg_ok', 'key-1'), at(DAY))).to.throw(/no webhook 2/);
  });

  it('resends a delivery for 30 days from when it was made, then refuses with 410 delivery_expired naming when it was made', () => {
    spec.given(one(base())).when(resend(1, 'msg_ok', 'k'), new Date(T0.getTime() + RESEND_WINDOW_MS)).then([
      { type: 'WebhookMessagesResent', data: { webhook_id: 1, request: 'k', since: null, messages: [{ message_id: 'msg_ok', attempts_before: 1 }], at: new Date(T0.getTime() + RESEND_WINDOW_MS).toISOString() } },
    ]);
    spec
      .given(one(base()))
      .when(resend(1, 'msg_ok', 'k'), new Date(T0.getTime() + RESEND_WINDOW_MS + 1))
      .thenThrows('delivery_expired', (err) => expect(err.extensions).to.deep.equal({ made_at: T0.toISOString() }));
  });

  it('resends every message since an instant whose last attempt failed, tests included, 30 days back at most', () => {
    const events = base();
    const withTest = [...events, ...decideAfter(events, { ...attempt(1, 'msg_test', failed, 'test'), envelope: testEnvelope('score_move', at(2 * HOUR)) }, at(2 * HOUR))];
    spec
      .given(one(withTest))
      .when(resendFailed(1, T0, 'bulk-1'), at(DAY))
      .then([
        {
          type: 'WebhookMessagesResent',
          data: {
            webhook_id: 1,
            request: 'bulk-1',
            since: T0.toISOString(),
            messages: [
              { message_id: 'msg_bad', attempts_before: 2 },
              { message_id: 'msg_test', attempts_before: 1 },
            ],
            at: at(DAY).toISOString(),
          },
        },
      ]);
    // Since after msg_bad was made: the test only. A bound older than 30 days is 30 days ago.
    expect(outcome(withTest, resendFailed(1, at(HOUR + 1), 'bulk-2'), at(DAY)).message_ids).to.deep.equal(['msg_test']);
    const month = new Date(T0.getTime() + RESEND_WINDOW_MS + 1.5 * HOUR);
    expect(outcome(withTest, resendFailed(1, new Date(0), 'bulk-3'), month)).to.deep.include({ message_ids: ['msg_test'], since: new Date(month.getTime() - RESEND_WINDOW_MS).toISOString() });
  });

  it('resends a test with the body it was sent with, and its resent attempts stay tests: never deactivating, retried', () => {
    const body = testEnvelope('score_move', at(2 * HOUR));
    const events = [...base(), ...decideAfter(base(), { ...attempt(1, 'msg_test', failed, 'test'), envelope: body }, at(2 * HOUR))];
    expect(attempts(events).at(-1)).to.deep.include({ message_id: 'msg_test', kind: 'test', attempt: 1, next_attempt_at: null, envelope: body });
    const resent = [...events, ...decideAfter(events, resend(1, 'msg_test', 'k'), at(DAY))];
    expect(webhookState(resent, 1).messages.get('msg_test')).to.deep.include({ kind: 'test', envelope: body, attempts: 1 });
    const gone = decideAfter(resent, attempt(1, 'msg_test', { ok: false, status_code: 410, error: 'receiver answered 410' }, 'test'), at(DAY + SECOND));
    expect(gone.map((e) => e.type)).to.deep.equal(['WebhookDeliveryAttempted']);
    expect(attempts(gone)[0]).to.deep.include({ attempt: 2, kind: 'test' }).and.not.have.property('envelope');
    expect(attempts(gone)[0]!.next_attempt_at).to.equal(new Date(at(DAY + SECOND).getTime() + 5 * SECOND).toISOString());
  });

  it('keeps a message owed when it is resent while an attempt of it is on its way: that resend is sent too', () => {
    const resent = [...base(), ...decideAfter(base(), resend(1, 'msg_ok', 'k1'), at(DAY))];
    const round = webhookState(resent, 1).messages.get('msg_ok')!.round;
    // Read before sending (its round), resent again while it is sent, then recorded.
    const again = [...resent, ...decideAfter(resent, resend(1, 'msg_ok', 'k2'), at(DAY + SECOND))];
    const recorded = decideAfter(again, { ...(attempt(1, 'msg_ok', delivered) as RecordAttempt), round }, at(DAY + 2 * SECOND));
    expect(attempts(recorded)[0]).to.deep.include({ attempt: 2, ok: true, next_attempt_at: at(DAY + SECOND).toISOString() });
    const after = [...again, ...recorded];
    expect(webhookState(after, 1).messages.get('msg_ok')).to.deep.include({ next_attempt_at: at(DAY + SECOND).toISOString() });
    const last = decideAfter(after, { ...(attempt(1, 'msg_ok', delivered) as RecordAttempt), round: at(DAY + SECOND).toISOString() }, at(DAY + 3 * SECOND));
    expect(attempts(last)[0]).to.deep.include({ attempt: 3, next_attempt_at: null });
  });

  it('keeps the live rules: a live attempt of a message not in flight records nothing, a delivered resend is no longer owed', () => {
    const events = base();
    expect(decideAfter(events, attempt(1, 'msg_ok', delivered), at(DAY))).to.deep.equal([]);
    const resent = [...events, ...decideAfter(events, resend(1, 'msg_ok', 'k'), at(DAY))];
    const done = [...resent, ...decideAfter(resent, attempt(1, 'msg_ok', delivered), at(DAY + SECOND))];
    expect(webhookState(done, 1).messages.has('msg_ok')).to.equal(false);
    expect(webhookState(done, 1).sent.get('msg_ok')).to.deep.include({ attempts: 2, last_ok: true });
  });
});
