/**
 * One webhook's stream `webhook-<id>` folded (docs/webhooks.md, "How webhooks are stored"): what
 * its registration, deletion and reactivation (commands/manage-webhooks) and its deliveries
 * (commands/deliver-webhooks) are decided on.
 */
import type { PersonalData } from '../../core/personal-data.port.js';
import { SecretUnreadableError } from '../../core/aes-gcm-secret-box.js';
import type { SigningSecrets } from './webhook-signing.js';
import { testEnvelope, type WebhookEnvelope, type WebhookEventType } from './webhook-envelope.js';
import type { WebhookEvent } from './webhook.events.js';

/** A message owed (a queued live message, or one resent) not yet delivered nor given up. */
export interface MessageInFlight {
  kind: 'live' | 'test';
  event_type: WebhookEventType;
  envelope: WebhookEnvelope;
  /** Attempts made so far, earlier rounds included (0: queued, not attempted yet). */
  attempts: number;
  /** Attempts made before this round (a resend's; 0 for a message first queued): the retry schedule counts from here. */
  resent_after: number;
  /** When the next attempt is due: the queueing (or resending) time before the first. */
  next_attempt_at: string;
  /** When this round began (the queueing, or the last resend): an attempt records the round it was sent for. */
  round: string;
}

/** A message sent here once at least (a live one from its queueing, a test from its attempt): what a resend needs. */
export interface SentMessage {
  kind: 'live' | 'test';
  event_type: WebhookEventType;
  envelope: WebhookEnvelope;
  /** When it was made (queued, or a test sent): the 30 days a resend is allowed count from here. */
  first_at: string;
  /** Attempts made, every round. */
  attempts: number;
  /** The last attempt's outcome; null before the first. */
  last_ok: boolean | null;
}

/** A resend decided under an idempotency key: what a request sent again with that key is answered. */
export interface ResendRecord {
  since: string | null;
  message_ids: string[];
  at: string;
}

export interface WebhookState {
  exists: boolean;
  deleted: boolean;
  webhook_id: number | null;
  account_id: string | null;
  event_type: WebhookEventType | null;
  url: string | null;
  /** The signing secret as the log holds it (sealed, or in clear before sealing existed). */
  secret: string | null;
  /** The secret a rotation replaced, still signing until `previous_secret_until` (transport time). */
  previous_secret: string | null;
  previous_secret_until: string | null;
  is_active: boolean;
  consecutive_failures: number;
  /** The first live failure since the last success (or reactivation); null when none. */
  first_failure_at: string | null;
  /** The last attempt's time, live or test. */
  last_fired_at: string | null;
  created_at: string | null;
  /** message_id → the message. Dropped on delivery, giving up, deactivation and deletion. */
  messages: Map<string, MessageInFlight>;
  /** Every message id ever queued here, delivered or not: an id is queued once. */
  queued: Set<string>;
  /** `eventKey` of every live event ever queued here (the dispatcher's "once per ticker and date"). */
  sent_events: Set<string>;
  /** message_id → every message sent here, in the order they were made. */
  sent: Map<string, SentMessage>;
  /** Idempotency key → the resend decided under it, kept 30 days. */
  resends: Map<string, ResendRecord>;
}

/** What makes a live event the same one again: its type, ticker and date. */
export const eventKey = (e: { type: string; ticker: string; date: string }): string => `${e.type}|${e.ticker}|${e.date}`;

export const initialWebhookState = (): WebhookState => ({
  exists: false,
  deleted: false,
  webhook_id: null,
  account_id: null,
  event_type: null,
  url: null,
  secret: null,
  previous_secret: null,
  previous_secret_until: null,
  is_active: false,
  consecutive_failures: 0,
  first_failure_at: null,
  last_fired_at: null,
  created_at: null,
  messages: new Map(),
  queued: new Set(),
  sent_events: new Set(),
  sent: new Map(),
  resends: new Map(),
});

export function evolveWebhook(state: WebhookState, event: WebhookEvent): WebhookState {
  switch (event.type) {
    case 'WebhookRegistered': {
      const d = event.data;
      return {
        ...initialWebhookState(),
        exists: true,
        webhook_id: d.webhook_id,
        account_id: d.account_id,
        event_type: d.event_type,
        url: d.url,
        secret: d.secret,
        is_active: true,
        created_at: d.at,
      };
    }
    case 'WebhookDeleted':
      return { ...state, deleted: true, is_active: false, messages: new Map() };
    case 'WebhookMessageQueued':
      return evolveQueued(state, event.data);
    case 'WebhookMessagesResent':
      return evolveResent(state, event.data);
    case 'WebhookDeliveryAttempted':
      return evolveAttempted(state, event.data);
    case 'WebhookDeactivated':
      return { ...state, is_active: false, messages: new Map() };
    case 'WebhookReactivated':
      return { ...state, is_active: true, consecutive_failures: 0, first_failure_at: null };
    case 'WebhookSecretRotated':
      return { ...state, secret: event.data.secret, previous_secret: state.secret, previous_secret_until: event.data.previous_until };
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

type DataOf<T extends WebhookEvent['type']> = Extract<WebhookEvent, { type: T }>['data'];

function evolveQueued(state: WebhookState, d: DataOf<'WebhookMessageQueued'>): WebhookState {
  const messages = new Map(state.messages);
  messages.set(d.message_id, { kind: 'live', event_type: d.event_type, envelope: d.envelope, attempts: 0, resent_after: 0, next_attempt_at: d.at, round: d.at });
  const queued = new Set(state.queued).add(d.message_id);
  const sent_events = new Set(state.sent_events);
  for (const e of d.envelope.events) sent_events.add(eventKey(e));
  const sent = new Map(state.sent).set(d.message_id, { kind: 'live', event_type: d.event_type, envelope: d.envelope, first_at: d.at, attempts: 0, last_ok: null });
  return { ...state, messages, queued, sent_events, sent };
}

/** How long a resend's idempotency key is kept, and a message can be resent: 30 days. */
export const RESEND_WINDOW_MS = 30 * 86_400_000;

/** Each message resent is owed again, due at once; the key is kept (those older than 30 days go). */
function evolveResent(state: WebhookState, d: DataOf<'WebhookMessagesResent'>): WebhookState {
  const messages = new Map(state.messages);
  for (const { message_id, attempts_before } of d.messages) {
    const m = state.sent.get(message_id);
    if (m) messages.set(message_id, { kind: m.kind, event_type: m.event_type, envelope: m.envelope, attempts: attempts_before, resent_after: attempts_before, next_attempt_at: d.at, round: d.at });
  }
  const resends = new Map(state.resends);
  const oldest = Date.parse(d.at) - RESEND_WINDOW_MS;
  for (const [key, r] of resends) {
    if (Date.parse(r.at) >= oldest) break;
    resends.delete(key);
  }
  resends.set(d.request, { since: d.since, message_ids: d.messages.map((m) => m.message_id), at: d.at });
  return { ...state, messages, resends };
}

/** The message an attempt was of, as `sent` keeps it: a test's first attempt adds it (its envelope rebuilt when the event predates envelopes in attempts). */
function sentAfter(state: WebhookState, d: DataOf<'WebhookDeliveryAttempted'>): Map<string, SentMessage> {
  const known = state.sent.get(d.message_id);
  const made: SentMessage | undefined =
    known ??
    (d.kind === 'test'
      ? { kind: 'test', event_type: d.event_type, envelope: d.envelope ?? testEnvelope(d.event_type, new Date(d.at)), first_at: d.at, attempts: 0, last_ok: null }
      : undefined);
  if (!made) return state.sent;
  return new Map(state.sent).set(d.message_id, { ...made, attempts: d.attempt, last_ok: d.ok });
}

function evolveAttempted(state: WebhookState, d: DataOf<'WebhookDeliveryAttempted'>): WebhookState {
  const next = { ...state, last_fired_at: d.at, sent: sentAfter(state, d) };
  if (d.ok) {
    next.consecutive_failures = 0;
    next.first_failure_at = null;
  } else {
    next.consecutive_failures = state.consecutive_failures + 1;
    if (d.kind === 'live') next.first_failure_at = state.first_failure_at ?? d.at;
  }
  const m = state.messages.get(d.message_id);
  if (m) {
    next.messages = new Map(state.messages);
    if (d.next_attempt_at === null) next.messages.delete(d.message_id);
    else next.messages.set(d.message_id, { ...m, attempts: d.attempt, next_attempt_at: d.next_attempt_at });
  }
  return next;
}


/** A registered, undeleted webhook with what a delivery needs (its URL, secret and type). */
export type UsableWebhook = WebhookState & { webhook_id: number; url: string; secret: string; event_type: WebhookEventType };

export const isUsable = (s: WebhookState): s is UsableWebhook =>
  s.exists && !s.deleted && s.webhook_id !== null && s.url !== null && s.secret !== null && s.event_type !== null;

/**
 * The secrets a delivery sent at `now` is signed with: the current one, and the one it replaced
 * while its overlap lasts. Throws SecretUnreadableError once the account is forgotten.
 */
export async function signingSecrets(hook: UsableWebhook, personal: PersonalData, now: Date): Promise<SigningSecrets> {
  const open = async (sealed: string) => {
    const secret = await personal.open(hook.account_id!, sealed, 'webhook-secret');
    if (secret === null) throw new SecretUnreadableError(`webhook ${hook.webhook_id}'s account was forgotten: its secret no longer opens`);
    return secret;
  };
  const overlapping = hook.previous_secret !== null && hook.previous_secret_until !== null && Date.parse(hook.previous_secret_until) > now.getTime();
  return { current: await open(hook.secret), previous: overlapping ? await open(hook.previous_secret!) : null };
}
