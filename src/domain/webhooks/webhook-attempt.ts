/**
 * What recording one delivery attempt writes on the webhook's stream: the rule a live delivery
 * (commands/deliver-webhooks) and a test delivery (commands/manage-webhooks) both record by.
 *
 * Test attempts: a failed test adds to `consecutive_failures` and a successful one ends the failure
 * run (it shows the endpoint answers), but a test never deactivates a webhook (not even on a 410)
 * and a failed test does not start the 5-day run: only live failures do.
 */
import { classifyAttempt, nextAttemptAt, shouldDeactivate } from './delivery-policy.js';
import type { WebhookEnvelope, WebhookEventType } from './webhook-envelope.js';
import type { WebhookEvent } from './webhook.events.js';
import type { WebhookState } from './webhook.state.js';

/** What one attempt gave (the sender's `DeliveryResult`, less where it connected). */
export interface AttemptResult {
  ok: boolean;
  status_code: number | null;
  error: string | null;
}

export interface RecordAttempt {
  type: 'RecordAttempt';
  webhook_id: number;
  message_id: string;
  kind: 'live' | 'test';
  event_type: WebhookEventType;
  event_count: number;
  result: AttemptResult;
  /** A test's body (recorded with its attempt, so that it can be resent); a live message's is queued. */
  envelope?: WebhookEnvelope;
  /**
   * The message's `round` as read before sending: another round now means it was resent while this
   * attempt was on its way, and it stays owed for that resend.
   */
  round?: string;
}

/**
 * One attempt, numbered per message (a resend's attempts follow the earlier ones). A failed
 * message in flight (live, or resent) gets its next attempt's time (null once `MAX_ATTEMPTS` of
 * this round are spent, or when this attempt deactivates the webhook); a test sent by `/test` is
 * not retried; a message resent while the attempt was on its way stays owed, due when it was
 * resent. A live attempt deactivates an active webhook on a 410 (`gone`) or once its live
 * failures have lasted 5 days (`failing`). A live attempt of a message no longer in flight
 * (delivered, given up, dropped by a deactivation or deletion meanwhile) records nothing; a test
 * attempt of a deleted webhook neither.
 */
export function attemptEvents(state: WebhookState, command: RecordAttempt, now: Date): WebhookEvent[] {
  if (!state.exists || state.deleted) return [];
  const { webhook_id, message_id, kind, event_type, event_count, result } = command;
  const at = now.toISOString();
  const message = state.messages.get(message_id);
  if (kind === 'live' && !message) return [];
  const attempt = (message?.attempts ?? state.sent.get(message_id)?.attempts ?? 0) + 1;
  const outcome = classifyAttempt(result);
  const deactivation = kind === 'live' && !outcome.ok && state.is_active ? deactivationOf(state, outcome.deactivate, now) : null;
  const resentMeanwhile = message !== undefined && command.round !== undefined && message.round !== command.round;
  const next =
    !message || deactivation !== null ? null : resentMeanwhile ? new Date(message.next_attempt_at) : outcome.ok ? null : nextAttemptAt(attempt - message.resent_after, now);
  const events: WebhookEvent[] = [
    {
      type: 'WebhookDeliveryAttempted',
      data: {
        webhook_id,
        message_id,
        kind,
        event_type,
        event_count,
        attempt,
        ok: outcome.ok,
        status_code: result.status_code,
        error: result.error,
        next_attempt_at: next ? next.toISOString() : null,
        ...(kind === 'test' && !message && command.envelope ? { envelope: command.envelope } : {}),
        at,
      },
    },
  ];
  if (deactivation) events.push({ type: 'WebhookDeactivated', data: { webhook_id, reason: deactivation, at } });
  return events;
}

/** Why a failed live attempt at `now` deactivates the webhook: a 410, or 5 days of failures; else null. */
function deactivationOf(state: WebhookState, gone: boolean, now: Date): 'gone' | 'failing' | null {
  if (gone) return 'gone';
  const firstFailure = new Date(state.first_failure_at ?? now.toISOString());
  return shouldDeactivate(firstFailure, now) ? 'failing' : null;
}
