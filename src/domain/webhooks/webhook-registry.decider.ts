/**
 * The registry stream `webhook-registry`, decided without I/O (docs/webhooks.md, "How webhooks are
 * stored"): it gives webhook ids and counts each account's live webhooks, so the limit of 10 is
 * decided on this one stream and concurrent registrations cannot overshoot it. A registration also
 * starts the new webhook's own stream: the handler writes each event to its stream.
 */
import { AppError, badRequest } from '../../core/errors.js';
import { routed, type Decider } from '../../core/decider.js';
import { checkWebhookUrl, type AllowSubnets } from './address-policy.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhook-envelope.js';
import { webhookStream, type WebhookEvent, type WebhookRegistryEvent } from './webhook.events.js';

/** Live (undeleted) webhooks per account. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 10;
/** Longest URL accepted at registration. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface RegistryState {
  /** Ids given so far; the next id is this plus one. */
  given: number;
  /** Live webhook id → its account. */
  live: Map<number, string>;
}

export interface RegisterWebhook {
  type: 'RegisterWebhook';
  account_id: string;
  event_type: string;
  url: string;
  secret: string;
  allow_subnets?: AllowSubnets;
}

/** The registry's events, and the registration that starts the new webhook's stream. */
export type RegistrationEvent = WebhookRegistryEvent | WebhookEvent;

const initialState = (): RegistryState => ({ given: 0, live: new Map() });

/** Registry events change it; a webhook's own events are not the registry's. */
function evolve(state: RegistryState, event: RegistrationEvent): RegistryState {
  if (event.type === 'WebhookIdAssigned') {
    const live = new Map(state.live);
    live.set(event.data.webhook_id, event.data.account_id);
    return { given: state.given + 1, live };
  }
  if (event.type === 'WebhookIdReleased') {
    const live = new Map(state.live);
    live.delete(event.data.webhook_id);
    return { ...state, live };
  }
  return state;
}

export const liveCount = (state: RegistryState, accountId: string): number => {
  let n = 0;
  for (const owner of state.live.values()) if (owner === accountId) n++;
  return n;
};

const isEventType = (x: string): x is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(x);

/**
 * A new webhook: the registry gives it the next id and counts it against its account; its own
 * stream starts with the registration (appended at 'no_stream'). Refuses an unknown event type or
 * a URL `checkWebhookUrl` refuses (400), and an account's 11th live webhook (422 `limit_exceeded`).
 */
function decide(registry: RegistryState, command: RegisterWebhook, now: Date): RegistrationEvent[] {
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
  return [
    { type: 'WebhookIdAssigned', data: { webhook_id, account_id, at } },
    { type: 'WebhookRegistered', data: { webhook_id, account_id, event_type, url, secret, at } },
  ];
}

export const webhookRegistryDecider = { initialState, evolve, decide } satisfies Decider<RegistryState, RegisterWebhook, RegistrationEvent>;

export const isRegistryEvent = (e: RegistrationEvent): e is WebhookRegistryEvent => e.type === 'WebhookIdAssigned' || e.type === 'WebhookIdReleased';

/** The registry decider as the handler runs it on the registry stream: a registration also starts the new webhook's own stream. */
export const registrationDecider = routed(webhookRegistryDecider, (e) => (isRegistryEvent(e) ? undefined : { streamId: webhookStream(e.data.webhook_id), expectedRevision: 'no_stream' as const }));
