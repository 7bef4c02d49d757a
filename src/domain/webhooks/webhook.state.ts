/**
 * One webhook's stream `webhook-<id>` folded (docs/webhooks.md, "How webhooks are stored"): what
 * its registration, deletion and reactivation (commands/manage-webhooks) and its deliveries
 * (commands/deliver-webhooks) are decided on.
 */
import type { PersonalData } from '../../core/personal-data.port.js';
import { SecretUnreadableError } from '../../core/aes-gcm-secret-box.js';
import type { SigningSecrets } from './webhook-signing.js';
import type { WebhookEnvelope, WebhookEventType } from './webhook-envelope.js';
import type { WebhookEvent } from './webhook.events.js';

/** A queued live message not yet delivered nor given up. */
export interface MessageInFlight {
  event_type: WebhookEventType;
  envelope: WebhookEnvelope;
  /** Attempts made so far (0: queued, not attempted yet). */
  attempts: number;
  /** When the next attempt is due: the queueing time before the first. */
  next_attempt_at: string;
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
  messages.set(d.message_id, { event_type: d.event_type, envelope: d.envelope, attempts: 0, next_attempt_at: d.at });
  const queued = new Set(state.queued).add(d.message_id);
  const sent_events = new Set(state.sent_events);
  for (const e of d.envelope.events) sent_events.add(eventKey(e));
  return { ...state, messages, queued, sent_events };
}

function evolveAttempted(state: WebhookState, d: DataOf<'WebhookDeliveryAttempted'>): WebhookState {
  const next = { ...state, last_fired_at: d.at };
  if (d.ok) {
    next.consecutive_failures = 0;
    next.first_failure_at = null;
  } else {
    next.consecutive_failures = state.consecutive_failures + 1;
    if (d.kind === 'live') next.first_failure_at = state.first_failure_at ?? d.at;
  }
  const m = d.kind === 'live' ? state.messages.get(d.message_id) : undefined;
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
