/**
 * Webhooks, decided without I/O (docs/webhooks.md, "How webhooks are stored").
 *
 * Two kinds of stream: the registry `webhook-registry` (ids given, live webhooks per account: the
 * limit of 10 is decided on this one stream, so concurrent registrations cannot overshoot it) and
 * one `webhook-<id>` per webhook (registration, messages, attempts, deactivation). Time, ids and
 * secrets are inputs; the handler (`webhooks.handler.ts`) runs these through the command handler.
 *
 * Test attempts: a failed test adds to `consecutive_failures` and a successful one ends the failure
 * run (it shows the endpoint answers), but a test never deactivates a webhook (not even on a 410)
 * and a failed test does not start the 5-day run: only live failures do.
 */
import { AppError, badRequest, notFound } from '../../src/core/errors.js';
import type { Stream } from '../../src/core/command-handler.js';
import { checkWebhookUrl, type AllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { classifyAttempt, nextAttemptAt, shouldDeactivate } from '../../src/domain/webhooks/delivery-policy.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEnvelope, type WebhookEventType } from '../../src/domain/webhooks/webhook-envelope.js';
import {
  WEBHOOK_REGISTRY_STREAM,
  webhookStream,
  type WebhookEvent,
  type WebhookRegistryEvent,
} from '../../src/domain/webhooks/webhook.events.js';

/** Live (undeleted) webhooks per account. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 10;
/** Longest URL accepted at registration. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

// ---------------------------------------------------------------------------------------------
// The registry

export interface RegistryState {
  /** Ids given so far; the next id is this plus one. */
  given: number;
  /** Live webhook id → its account. */
  live: Map<number, string>;
}

export const initialRegistryState = (): RegistryState => ({ given: 0, live: new Map() });

export function evolveRegistry(state: RegistryState, event: WebhookRegistryEvent): RegistryState {
  switch (event.type) {
    case 'WebhookIdAssigned': {
      const live = new Map(state.live);
      live.set(event.data.webhook_id, event.data.account_id);
      return { given: state.given + 1, live };
    }
    case 'WebhookIdReleased': {
      const live = new Map(state.live);
      live.delete(event.data.webhook_id);
      return { ...state, live };
    }
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

export const registryOf = (): Stream<RegistryState, WebhookRegistryEvent> => ({
  streamId: WEBHOOK_REGISTRY_STREAM,
  initialState: initialRegistryState,
  evolve: evolveRegistry,
});

export const liveCount = (state: RegistryState, accountId: string): number => {
  let n = 0;
  for (const owner of state.live.values()) if (owner === accountId) n++;
  return n;
};

// ---------------------------------------------------------------------------------------------
// One webhook

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
  secret: string | null;
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
    case 'WebhookMessageQueued': {
      const messages = new Map(state.messages);
      const d = event.data;
      messages.set(d.message_id, { event_type: d.event_type, envelope: d.envelope, attempts: 0, next_attempt_at: d.at });
      const queued = new Set(state.queued).add(d.message_id);
      const sent_events = new Set(state.sent_events);
      for (const e of d.envelope.events) sent_events.add(eventKey(e));
      return { ...state, messages, queued, sent_events };
    }
    case 'WebhookDeliveryAttempted': {
      const d = event.data;
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
    case 'WebhookDeactivated':
      return { ...state, is_active: false, messages: new Map() };
    case 'WebhookReactivated':
      return { ...state, is_active: true, consecutive_failures: 0, first_failure_at: null };
    default: {
      const _exhaustive: never = event;
      return _exhaustive;
    }
  }
}

export const webhookOf = (webhookId: number): Stream<WebhookState, WebhookEvent> => ({
  streamId: webhookStream(webhookId),
  initialState: initialWebhookState,
  evolve: evolveWebhook,
});

// ---------------------------------------------------------------------------------------------
// Commands

/** What one attempt gave (the sender's `DeliveryResult`, less where it connected). */
export interface AttemptResult {
  ok: boolean;
  status_code: number | null;
  error: string | null;
}

export type WebhookCommand =
  | { type: 'RegisterWebhook'; account_id: string; event_type: string; url: string; secret: string; allow_subnets?: AllowSubnets }
  | { type: 'DeleteWebhook'; account_id: string; webhook_id: number }
  | {
      type: 'QueueMessage';
      webhook_id: number;
      message_id: string;
      envelope: WebhookEnvelope;
      /**
       * Drop the envelope's events this webhook was queued before (same type, ticker and date), and
       * queue nothing when none is left: the live dispatcher's "once per ticker and date".
       */
      only_new_events?: boolean;
    }
  | {
      type: 'RecordAttempt';
      webhook_id: number;
      message_id: string;
      kind: 'live' | 'test';
      event_type: WebhookEventType;
      event_count: number;
      result: AttemptResult;
    }
  | { type: 'ReactivateWebhook'; account_id: string; webhook_id: number };

type Command<T extends WebhookCommand['type']> = Extract<WebhookCommand, { type: T }>;

const isEventType = (x: string): x is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(x);

/** The same answer for an unknown id, a deleted webhook and another account's: nothing is revealed. */
export function ownedBy(state: WebhookState, accountId: string, webhookId: number): WebhookState {
  if (!state.exists || state.deleted || state.account_id !== accountId) throw notFound(`no webhook ${webhookId}`);
  return state;
}

/**
 * A new webhook: the registry gives it the next id and counts it against its account; its own
 * stream starts with the registration (appended at 'no_stream'). Refuses an unknown event type or
 * a URL `checkWebhookUrl` refuses (400), and an account's 11th live webhook (422 `limit_exceeded`).
 */
export function decideRegistration(
  registry: RegistryState,
  command: Command<'RegisterWebhook'>,
  now: Date,
): { webhook_id: number; url: string; event_type: WebhookEventType; registry: WebhookRegistryEvent[]; webhook: WebhookEvent[] } {
  const { account_id, event_type, secret } = command;
  if (!isEventType(event_type)) throw badRequest(`event_type must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  if (command.url.length > MAX_WEBHOOK_URL_LENGTH) throw badRequest(`webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  const url = checkWebhookUrl(command.url, command.allow_subnets).href;
  if (liveCount(registry, account_id) >= MAX_WEBHOOKS_PER_ACCOUNT) {
    throw new AppError('limit_exceeded', `an account has at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one to register another`, {
      maximum: MAX_WEBHOOKS_PER_ACCOUNT,
    });
  }
  const webhook_id = registry.given + 1;
  const at = now.toISOString();
  return {
    webhook_id,
    url,
    event_type,
    registry: [{ type: 'WebhookIdAssigned', data: { webhook_id, account_id, at } }],
    webhook: [{ type: 'WebhookRegistered', data: { webhook_id, account_id, event_type, url, secret, at } }],
  };
}

/** Deletes an account's webhook and frees its place under the limit (its id is never given again). */
export function decideDeletion(
  webhook: WebhookState,
  command: Command<'DeleteWebhook'>,
  now: Date,
): { registry: WebhookRegistryEvent[]; webhook: WebhookEvent[] } {
  const { account_id, webhook_id } = command;
  ownedBy(webhook, account_id, webhook_id);
  const at = now.toISOString();
  return {
    webhook: [{ type: 'WebhookDeleted', data: { webhook_id, at } }],
    registry: [{ type: 'WebhookIdReleased', data: { webhook_id, account_id, at } }],
  };
}

/** Queueing, attempts and reactivation: decided on the webhook's own stream. */
export function decideWebhook(state: WebhookState, command: Command<'QueueMessage' | 'RecordAttempt' | 'ReactivateWebhook'>, now: Date): WebhookEvent[] {
  const at = now.toISOString();
  switch (command.type) {
    case 'QueueMessage': {
      // A message for a deleted or deactivated webhook is not owed: nothing to queue.
      if (!state.exists || state.deleted || !state.is_active || state.event_type === null) return [];
      // An id is queued once, even after its message was delivered or given up: a dispatcher that
      // decides a batch again (after a crash) derives the same id and queues nothing twice.
      if (state.queued.has(command.message_id) || state.messages.has(command.message_id)) return [];
      const { webhook_id, message_id } = command;
      let envelope = command.envelope;
      if (command.only_new_events) {
        const fresh = envelope.events.filter((e) => !state.sent_events.has(eventKey(e)));
        if (fresh.length === 0) return [];
        if (fresh.length < envelope.events.length) envelope = { ...envelope, events: fresh };
      }
      return [{ type: 'WebhookMessageQueued', data: { webhook_id, message_id, event_type: state.event_type, envelope, at } }];
    }
    case 'RecordAttempt':
      return decideAttempt(state, command, now);
    case 'ReactivateWebhook': {
      ownedBy(state, command.account_id, command.webhook_id);
      if (state.is_active) return [];
      return [{ type: 'WebhookReactivated', data: { webhook_id: command.webhook_id, at } }];
    }
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

/**
 * One attempt, numbered per message. A failed live message gets its next attempt's time (null
 * once `MAX_ATTEMPTS` are spent, or when this attempt deactivates the webhook). A live attempt
 * deactivates an active webhook on a 410 (`gone`) or once its live failures have lasted 5 days
 * (`failing`). A live attempt of a message no longer in flight (delivered, given up, dropped by a
 * deactivation or deletion meanwhile) records nothing; a test attempt of a deleted webhook neither.
 */
function decideAttempt(state: WebhookState, command: Command<'RecordAttempt'>, now: Date): WebhookEvent[] {
  if (!state.exists || state.deleted) return [];
  const { webhook_id, message_id, kind, event_type, event_count, result } = command;
  const at = now.toISOString();
  const message = kind === 'live' ? state.messages.get(message_id) : undefined;
  if (kind === 'live' && !message) return [];
  const attempt = (message?.attempts ?? 0) + 1;
  const outcome = classifyAttempt(result);
  let deactivation: 'gone' | 'failing' | null = null;
  if (kind === 'live' && !outcome.ok && state.is_active) {
    const firstFailure = new Date(state.first_failure_at ?? at);
    if (outcome.deactivate) deactivation = 'gone';
    else if (shouldDeactivate(firstFailure, now)) deactivation = 'failing';
  }
  const next = kind === 'live' && !outcome.ok && deactivation === null ? nextAttemptAt(attempt, now) : null;
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
        at,
      },
    },
  ];
  if (deactivation) events.push({ type: 'WebhookDeactivated', data: { webhook_id, reason: deactivation, at } });
  return events;
}

// ---------------------------------------------------------------------------------------------
// Every webhook stream at once: the given/when/then view of the tests

export interface WebhooksView {
  registry: RegistryState;
  webhooks: Map<number, WebhookState>;
}

type AnyWebhookEvent = WebhookEvent | WebhookRegistryEvent;

/**
 * The registry and every webhook folded together, each event routed to its stream: the decider
 * the tests drive with given/when/then. The handler decides with the same functions, stream by stream.
 */
export const webhooksDecider = {
  initialState: (): WebhooksView => ({ registry: initialRegistryState(), webhooks: new Map() }),
  evolve: (state: WebhooksView, event: AnyWebhookEvent): WebhooksView => {
    if (event.type === 'WebhookIdAssigned' || event.type === 'WebhookIdReleased') return { ...state, registry: evolveRegistry(state.registry, event) };
    const id = event.data.webhook_id;
    const webhooks = new Map(state.webhooks);
    webhooks.set(id, evolveWebhook(state.webhooks.get(id) ?? initialWebhookState(), event));
    return { ...state, webhooks };
  },
  decide: (state: WebhooksView, command: WebhookCommand, now: Date): AnyWebhookEvent[] => {
    const webhook = (id: number) => state.webhooks.get(id) ?? initialWebhookState();
    switch (command.type) {
      case 'RegisterWebhook': {
        const d = decideRegistration(state.registry, command, now);
        return [...d.registry, ...d.webhook];
      }
      case 'DeleteWebhook': {
        const d = decideDeletion(webhook(command.webhook_id), command, now);
        return [...d.webhook, ...d.registry];
      }
      case 'QueueMessage':
      case 'RecordAttempt':
      case 'ReactivateWebhook':
        return decideWebhook(webhook(command.webhook_id), command, now);
      default: {
        const _exhaustive: never = command;
        return _exhaustive;
      }
    }
  },
};
