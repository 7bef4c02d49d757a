/**
 * Webhooks' commands through the one command handler: ids from the ids port, time from the
 * clock, secrets from `newWebhookSecret`, deliveries through the `WebhookSender` port. What is
 * decided, and why, is in `webhook.decider.ts`.
 *
 * Two clocks. Registration and deletion are decided on the data clock (`clock`, which
 * `SCORES_NOW` pins). Everything about sending is transport time (`transportClock`, the wall
 * clock in the service): the signed `webhook-timestamp`, the envelope's `sent_at`, when a message
 * is queued and attempted, when its next attempt is due. A receiver checks the timestamp against
 * its own clock, and a pinned clock never reaches a retry's time.
 */
import type { Clock } from '../../src/core/clock.js';
import { badRequest } from '../../src/core/errors.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import type { AllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { testEnvelope, type WebhookEnvelope, type WebhookEventType } from '../../src/domain/webhooks/webhook-envelope.js';
import { SIGNING_STATEMENT, deliveryHeaders, newWebhookSecret } from '../../src/domain/webhooks/webhook-signing.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import {
  decideDeletion,
  decideRegistration,
  decideWebhook,
  ownedBy,
  registryOf,
  webhookOf,
  type AttemptResult,
  type WebhookCommand,
  type WebhookState,
} from './webhook.decider.js';

export interface WebhookDeps {
  events: EventStore;
  clock: Clock;
  /** When messages are made and sent (see above); default `clock`. */
  transportClock?: Clock;
  ids: Ids;
}

/** The clock of sending: the transport clock, or the one clock a caller gave. */
const sendingTime = (deps: Pick<WebhookDeps, 'clock' | 'transportClock'>): Date => (deps.transportClock ?? deps.clock).now();

/**
 * Every registration and deletion is decided on the one registry stream: concurrent ones conflict
 * there and are decided again, so allow more rounds than the default.
 */
const REGISTRY_ATTEMPTS = 25;
export const SIGNATURE_HEADER = 'X-Service-Signature';

export interface RegisteredWebhook {
  id: number;
  event_type: WebhookEventType;
  url: string;
  /** Shown once: deliveries are signed with it. */
  secret: string;
  signing: string;
}

export async function registerWebhook(
  deps: WebhookDeps & { allowSubnets?: AllowSubnets; newSecret?: () => string; sender?: Pick<WebhookSender, 'refusal'> },
  input: { accountId: string; eventType: string; url: string },
): Promise<RegisteredWebhook> {
  // The host is judged now as each delivery will judge it again (the HTTP face passes the sender).
  const refusal = await deps.sender?.refusal(input.url);
  if (refusal) throw badRequest(`webhook URL refused: ${refusal}`, { errors: [{ parameter: 'url', message: refusal }] });
  const secret = (deps.newSecret ?? newWebhookSecret)();
  const registry = registryOf();
  const command = { type: 'RegisterWebhook' as const, account_id: input.accountId, event_type: input.eventType, url: input.url, secret, allow_subnets: deps.allowSubnets };
  const { result } = await handleCommand(
    deps.events,
    registry,
    (state) => {
      const d = decideRegistration(state, command, deps.clock.now());
      return {
        writes: [
          { streamId: registry.streamId, events: d.registry },
          { streamId: webhookStream(d.webhook_id), events: d.webhook, expectedRevision: 'no_stream' as const },
        ],
        result: { id: d.webhook_id, event_type: d.event_type, url: d.url, secret, signing: SIGNING_STATEMENT },
      };
    },
    { attempts: REGISTRY_ATTEMPTS },
  );
  return result;
}

export async function deleteWebhook(deps: Omit<WebhookDeps, 'ids'>, accountId: string, id: number): Promise<{ ok: true }> {
  const registry = registryOf();
  const webhook = webhookOf(id);
  await handleCommand(
    deps.events,
    [registry, webhook],
    ([, state]) => {
      const d = decideDeletion(state, { type: 'DeleteWebhook', account_id: accountId, webhook_id: id }, deps.clock.now());
      return {
        writes: [
          { streamId: webhook.streamId, events: d.webhook },
          { streamId: registry.streamId, events: d.registry },
        ],
        result: undefined,
      };
    },
    { attempts: REGISTRY_ATTEMPTS },
  );
  return { ok: true };
}

export async function reactivateWebhook(deps: Omit<WebhookDeps, 'ids'>, accountId: string, id: number): Promise<{ id: number; is_active: true; reactivated: boolean }> {
  const { result } = await runOnWebhook(deps, id, { type: 'ReactivateWebhook', account_id: accountId, webhook_id: id }, () => deps.clock.now());
  return { id, is_active: true, reactivated: result.length > 0 };
}

/** Decides `command` on the webhook's stream at `now()`, read again on each round. */
function runOnWebhook(deps: Pick<WebhookDeps, 'events'>, id: number, command: Parameters<typeof decideWebhook>[1], now: () => Date) {
  return handleCommand(deps.events, webhookOf(id), (state) => decideWebhook(state, command, now()));
}

export interface TestDelivery {
  ok: boolean;
  status_code: number | null;
  error: string | null;
  /** The registered URL. */
  delivered_to: string;
  signature_header: typeof SIGNATURE_HEADER;
  payload: WebhookEnvelope;
}

/** Signs and sends `body` (the exact bytes) once, and records the attempt. */
async function attempt(
  deps: Omit<WebhookDeps, 'ids'> & { sender: WebhookSender },
  hook: WebhookState & { webhook_id: number; url: string; secret: string },
  message: { id: string; kind: 'live' | 'test'; event_type: WebhookEventType; envelope: WebhookEnvelope; body: string },
): Promise<AttemptResult> {
  // Signed at the instant it leaves: the receiver checks this time against its own clock.
  const headers = deliveryHeaders(hook.secret, message.id, sendingTime(deps), message.body);
  const sent = await deps.sender.send({ url: hook.url, body: message.body, headers: { ...headers } });
  const result: AttemptResult = { ok: sent.ok, status_code: sent.status_code, error: sent.error };
  await runOnWebhook(deps, hook.webhook_id, {
    type: 'RecordAttempt',
    webhook_id: hook.webhook_id,
    message_id: message.id,
    kind: message.kind,
    event_type: message.event_type,
    event_count: message.envelope.events.length,
    result,
  }, () => sendingTime(deps));
  return result;
}

const readWebhook = async (events: EventStore, id: number): Promise<WebhookState> => (await foldStream(events, webhookOf(id))).state;

type Usable = WebhookState & { webhook_id: number; url: string; secret: string; event_type: WebhookEventType };
const usable = (s: WebhookState): s is Usable => s.exists && !s.deleted && s.webhook_id !== null && s.url !== null && s.secret !== null && s.event_type !== null;

/**
 * Sends one example event of the webhook's type, marked test, and records the attempt. Allowed
 * on a deactivated webhook too (to check the endpoint before reactivating it).
 */
export async function sendTestDelivery(deps: WebhookDeps & { sender: WebhookSender }, accountId: string, id: number): Promise<TestDelivery> {
  const hook = ownedBy(await readWebhook(deps.events, id), accountId, id);
  if (!usable(hook)) throw new Error(`webhook ${id} is registered without its url, type or secret`);
  const envelope = testEnvelope(hook.event_type, sendingTime(deps));
  const body = JSON.stringify(envelope);
  const result = await attempt(deps, hook, { id: deps.ids.next('msg_', 16), kind: 'test', event_type: hook.event_type, envelope, body });
  return { ...result, delivered_to: hook.url, signature_header: SIGNATURE_HEADER, payload: envelope };
}

/**
 * For the dispatcher: owes `envelope` to the webhook (nothing when it is deleted or inactive).
 * Returns the message id, or null when nothing was queued. `messageId`: a deterministic id (the
 * live dispatcher's), queued at most once; else a random one from the ids port. `onlyNewEvents`:
 * leave out the events this webhook was queued before (same type, ticker and date).
 */
export async function queueMessage(
  deps: Omit<WebhookDeps, 'ids'> & { ids?: Ids },
  id: number,
  envelope: WebhookEnvelope,
  options: { messageId?: string; onlyNewEvents?: boolean } = {},
): Promise<string | null> {
  const messageId = options.messageId ?? deps.ids?.next('msg_', 16);
  if (!messageId) throw new Error('queueMessage needs a message id or the ids port');
  const command = { type: 'QueueMessage', webhook_id: id, message_id: messageId, envelope, only_new_events: options.onlyNewEvents } satisfies WebhookCommand;
  const { result } = await runOnWebhook(deps, id, command, () => sendingTime(deps));
  return result.length > 0 ? messageId : null;
}

/**
 * For the dispatcher: the next attempt of a queued message: its envelope's same bytes, with fresh
 * headers for this attempt. Null when the message is no longer owed (delivered, given up, or its
 * webhook deleted or deactivated), its next attempt is not due yet by the clock, or the webhook
 * is not active.
 */
export async function deliverMessage(deps: Omit<WebhookDeps, 'ids'> & { sender: WebhookSender }, id: number, messageId: string): Promise<AttemptResult | null> {
  const hook = await readWebhook(deps.events, id);
  const message = hook.messages.get(messageId);
  if (!usable(hook) || !hook.is_active || !message) return null;
  // Not due yet (a read model behind the log may still show an earlier time).
  if (Date.parse(message.next_attempt_at) > sendingTime(deps).getTime()) return null;
  const body = JSON.stringify(message.envelope);
  return attempt(deps, hook, { id: messageId, kind: 'live', event_type: message.event_type, envelope: message.envelope, body });
}
