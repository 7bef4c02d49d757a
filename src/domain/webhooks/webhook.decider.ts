/**
 * What an account does to one of its webhooks, decided without I/O on the webhook's stream
 * (docs/webhooks.md, "How webhooks are stored"): deleting it (which also frees its place on the
 * registry) and reactivating it. Registration is decided on the registry
 * (`webhook-registry.decider.ts`); deliveries in commands/deliver-webhooks. Rotating its secret:
 * the previous secret still signs during the overlap the command names.
 */
import { routed, type Decider } from '../../core/decider.js';
import { notFound } from '../../core/errors.js';
import { WEBHOOK_REGISTRY_STREAM, type WebhookEvent, type WebhookRegistryEvent } from './webhook.events.js';
import { evolveWebhook, initialWebhookState, type WebhookState } from './webhook.state.js';

export type ManageWebhookCommand =
  | { type: 'DeleteWebhook'; account_id: string; webhook_id: number }
  | { type: 'ReactivateWebhook'; account_id: string; webhook_id: number }
  /** `secret` sealed; the old one keeps signing until `previous_until` (transport time). */
  | { type: 'RotateWebhookSecret'; account_id: string; webhook_id: number; secret: string; previous_until: string };

/** The webhook's events, and the registry's release of a deleted webhook's place. */
export type ManageWebhookEvent = WebhookEvent | WebhookRegistryEvent;

/** The same answer for an unknown id, a deleted webhook and another account's: nothing is revealed. */
export function ownedBy(state: WebhookState, accountId: string, webhookId: number): WebhookState {
  if (!state.exists || state.deleted || state.account_id !== accountId) throw notFound(`no webhook ${webhookId}`);
  return state;
}

/** The webhook's own events change it; the registry's are not its. */
function evolve(state: WebhookState, event: ManageWebhookEvent): WebhookState {
  if (event.type === 'WebhookIdAssigned' || event.type === 'WebhookIdReleased') return state;
  return evolveWebhook(state, event);
}

function decide(state: WebhookState, command: ManageWebhookCommand, now: Date): ManageWebhookEvent[] {
  const { account_id, webhook_id } = command;
  ownedBy(state, account_id, webhook_id);
  const at = now.toISOString();
  switch (command.type) {
    // Deleted, and its place under the limit freed (its id is never given again).
    case 'DeleteWebhook':
      return [
        { type: 'WebhookDeleted', data: { webhook_id, at } },
        { type: 'WebhookIdReleased', data: { webhook_id, account_id, at } },
      ];
    case 'ReactivateWebhook':
      return state.is_active ? [] : [{ type: 'WebhookReactivated', data: { webhook_id, at } }];
    case 'RotateWebhookSecret':
      return [{ type: 'WebhookSecretRotated', data: { webhook_id, secret: command.secret, previous_until: command.previous_until, at } }];
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export const webhookDecider = { initialState: initialWebhookState, evolve, decide } satisfies Decider<WebhookState, ManageWebhookCommand, ManageWebhookEvent>;

/**
 * The webhook decider as the handler runs it on the webhook's stream read together with the
 * registry (whose events `evolve` passes over): a deletion frees the webhook's place there.
 */
export const webhookWithRegistryDecider = routed(webhookDecider, (e) => (e.type === 'WebhookIdReleased' || e.type === 'WebhookIdAssigned' ? { streamId: WEBHOOK_REGISTRY_STREAM } : undefined));
