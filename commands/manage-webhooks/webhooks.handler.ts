/**
 * What an account does with its webhooks, through the one command handler: registering, deleting,
 * reactivating, sending a test delivery, and resending deliveries. Ids from the ids port, time from the clock, secrets
 * from `newWebhookSecret`, the test delivery through the `WebhookSender` port. What is decided,
 * and why, is in `webhook-registry.decider.ts` and `webhook.decider.ts`; live deliveries are
 * commands/deliver-webhooks.
 *
 * Two clocks. Registration and deletion are decided on the data clock (`clock`, which
 * `SCORES_NOW` pins). Everything about sending is transport time (`transportClock`, the wall
 * clock in the service): the signed `webhook-timestamp`, the envelope's `sent_at`, when the
 * attempt is recorded. A receiver checks the timestamp against its own clock.
 */
import { wallClockOf, type Clock } from '../../src/core/clock.js';
import { badRequest } from '../../src/core/errors.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import type { AllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import type { AttemptResult } from '../../src/domain/webhooks/webhook-attempt.js';
import { testEnvelope, type WebhookEnvelope, type WebhookEventType } from '../../src/domain/webhooks/webhook-envelope.js';
import { SIGNING_STATEMENT, deliveryHeaders, newWebhookSecret } from '../../src/domain/webhooks/webhook-signing.js';
import { WEBHOOK_REGISTRY_STREAM, webhookStream, type WebhookRegistered } from '../../src/domain/webhooks/webhook.events.js';
import { isUsable, signingSecrets } from '../../src/domain/webhooks/webhook.state.js';
import { registrationDecider } from '../../src/domain/webhooks/webhook-registry.decider.js';
import { webhookDeliveryDecider } from '../../src/domain/webhooks/webhook-delivery.decider.js';
import { ownedBy, webhookDecider, webhookWithRegistryDecider, type ManageWebhookCommand } from '../../src/domain/webhooks/webhook.decider.js';
import { webhookResendDecider, type ResendCommand, type ResendOutcome } from '../../src/domain/webhooks/webhook-resend.decider.js';

export interface WebhookDeps {
  events: EventStore;
  clock: Clock;
  /** When messages are made and sent (see above); default `clock`. */
  transportClock?: Clock;
  ids: Ids;
  /** Seals a new secret before it is written, opens it to sign. */
  personal: PersonalData;
}

/** The clock of sending: the transport clock, or the one clock a caller gave. */
const sendingTime = (deps: Pick<WebhookDeps, 'clock' | 'transportClock'>): Date => wallClockOf(deps).now();

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
  const sealed = await deps.personal.seal(input.accountId, secret, 'webhook-secret');
  const command = { type: 'RegisterWebhook' as const, account_id: input.accountId, event_type: input.eventType, url: input.url, secret: sealed, allow_subnets: deps.allowSubnets };
  const { written } = await handleCommand(deps.events, registrationDecider, WEBHOOK_REGISTRY_STREAM, command, deps.clock, { attempts: REGISTRY_ATTEMPTS });
  const registered = written.flatMap((w) => w.events).find((e): e is WebhookRegistered => e.type === 'WebhookRegistered')!.data;
  return { id: registered.webhook_id, event_type: registered.event_type, url: registered.url, secret, signing: SIGNING_STATEMENT };
}

export async function deleteWebhook(deps: Omit<WebhookDeps, 'ids'>, accountId: string, id: number): Promise<{ ok: true }> {
  const command: ManageWebhookCommand = { type: 'DeleteWebhook', account_id: accountId, webhook_id: id };
  await handleCommand(deps.events, webhookWithRegistryDecider, [webhookStream(id), WEBHOOK_REGISTRY_STREAM], command, deps.clock, { attempts: REGISTRY_ATTEMPTS });
  return { ok: true };
}

/** Deletes every live webhook of the account (it is being forgotten); answers their ids. */
export async function deleteAccountWebhooks(deps: Omit<WebhookDeps, 'ids'>, accountId: string): Promise<number[]> {
  const { state } = await foldStream(deps.events, registrationDecider, WEBHOOK_REGISTRY_STREAM);
  const ids = [...state.live].filter(([, owner]) => owner === accountId).map(([id]) => id);
  for (const id of ids) await deleteWebhook(deps, accountId, id);
  return ids;
}

/** How long a rotated-out secret still signs unless the owner says otherwise (Svix's default). */
export const DEFAULT_OVERLAP_HOURS = 24;
export const MAX_OVERLAP_HOURS = 168;

export interface RotatedSecret {
  id: number;
  /** Shown once, like a registration's. */
  secret: string;
  /** Until when deliveries carry a second signature made with the previous secret (transport time). */
  previous_secret_expires_at: string;
  signing: string;
}

/**
 * A new signing secret for one of the account's webhooks; the previous one keeps signing beside it
 * for `overlapHours` (0: from now on only the new one). A rotation during an overlap ends that
 * overlap: the secret replaced now is the one that overlaps.
 */
export async function rotateWebhookSecret(
  deps: Omit<WebhookDeps, 'ids'> & { newSecret?: () => string },
  accountId: string,
  id: number,
  overlapHours = DEFAULT_OVERLAP_HOURS,
): Promise<RotatedSecret> {
  if (!Number.isInteger(overlapHours) || overlapHours < 0 || overlapHours > MAX_OVERLAP_HOURS) {
    throw badRequest(`overlap_hours must be a whole number from 0 to ${MAX_OVERLAP_HOURS}`, { errors: [{ parameter: 'overlap_hours', message: `0 to ${MAX_OVERLAP_HOURS}` }] });
  }
  const secret = (deps.newSecret ?? newWebhookSecret)();
  const sealed = await deps.personal.seal(accountId, secret, 'webhook-secret');
  const until = new Date(sendingTime(deps).getTime() + overlapHours * 3_600_000).toISOString();
  const command: ManageWebhookCommand = { type: 'RotateWebhookSecret', account_id: accountId, webhook_id: id, secret: sealed, previous_until: until };
  await handleCommand(deps.events, webhookDecider, webhookStream(id), command, wallClockOf(deps));
  return { id, secret, previous_secret_expires_at: until, signing: SIGNING_STATEMENT };
}

export async function reactivateWebhook(deps: Omit<WebhookDeps, 'ids'>, accountId: string, id: number): Promise<{ id: number; is_active: true; reactivated: boolean }> {
  const command: ManageWebhookCommand = { type: 'ReactivateWebhook', account_id: accountId, webhook_id: id };
  const { events } = await handleCommand(deps.events, webhookDecider, webhookStream(id), command, deps.clock);
  return { id, is_active: true, reactivated: events.length > 0 };
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

/**
 * Sends one example event of the webhook's type, marked test, once, and records the attempt (by
 * the rule every attempt is recorded by). Allowed on a deactivated webhook too (to check the
 * endpoint before reactivating it).
 */
export async function sendTestDelivery(deps: WebhookDeps & { sender: WebhookSender }, accountId: string, id: number): Promise<TestDelivery> {
  const hook = ownedBy((await foldStream(deps.events, webhookDecider, webhookStream(id))).state, accountId, id);
  if (!isUsable(hook)) throw new Error(`webhook ${id} is registered without its url, type or secret`);
  const envelope = testEnvelope(hook.event_type, sendingTime(deps));
  const body = JSON.stringify(envelope);
  const messageId = deps.ids.next('msg_', 16);
  // Signed at the instant it leaves: the receiver checks this time against its own clock.
  const at = sendingTime(deps);
  const headers = deliveryHeaders(await signingSecrets(hook, deps.personal, at), messageId, at, body);
  const sent = await deps.sender.send({ url: hook.url, body, headers: { ...headers } });
  const result: AttemptResult = { ok: sent.ok, status_code: sent.status_code, error: sent.error };
  const command = { type: 'RecordAttempt' as const, webhook_id: id, message_id: messageId, kind: 'test' as const, event_type: hook.event_type, event_count: envelope.events.length, result, envelope };
  await handleCommand(deps.events, webhookDeliveryDecider, webhookStream(id), command, wallClockOf(deps));
  return { ...result, delivered_to: hook.url, signature_header: SIGNATURE_HEADER, payload: envelope };
}

/** A resend's request: its idempotency key (the `Idempotency-Key` header, a page's form), or a fresh one. */
export const resendKey = (deps: Pick<WebhookDeps, 'ids'>, given: string | undefined): string => given ?? deps.ids.next('rsd_', 12);

/**
 * Resends one delivery (a message made here within 30 days, failed or not), or every message of
 * the webhook whose last attempt failed since `since`: each is owed again under its own message
 * id and the dispatcher sends it, signed at the sending time, its attempts recorded like any
 * other (commands/deliver-webhooks). Decided on the webhook's stream on the transport clock (the
 * clock the messages' times are on); a request key already used answers what it decided then.
 */
export async function resendDeliveries(
  deps: Omit<WebhookDeps, 'ids'>,
  accountId: string,
  id: number,
  what: { message_id: string } | { since: string },
  request: string,
): Promise<ResendOutcome> {
  const command: ResendCommand =
    'message_id' in what
      ? { type: 'ResendMessage', account_id: accountId, webhook_id: id, message_id: what.message_id, request }
      : { type: 'ResendFailed', account_id: accountId, webhook_id: id, since: what.since, request };
  const { result } = await handleCommand(deps.events, webhookResendDecider, webhookStream(id), command, wallClockOf(deps));
  return result!;
}
