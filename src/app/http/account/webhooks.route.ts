/**
 * The account's webhooks in the browser (`/account/webhooks`): the list, the registration
 * (confirmed, then the secret shown once on the webhook's page the form redirects to), and what
 * the webhook routes share: the account's own webhook (another account's is 404), the plan check
 * (webhooks need quant, as the API's), and the pages they answer with. Every action runs the same
 * handlers as the API (commands/manage-webhooks).
 */
import { registerWebhook } from '../../../../commands/manage-webhooks/webhooks.handler.js';
import { listDeliveredMessages, listWebhooks, webhooksCaughtUp, type WebhookListItem } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { AppError, notFound } from '../../../core/errors.js';
import { stateAt } from '../../../domain/ledger/ledger.figures.js';
import { tierAtLeast, tierName, type Tier } from '../../../domain/plans.js';
import { RATE_CARD, requireTier } from '../../../domain/rate-card.js';
import { RESEND_WINDOW_MS } from '../../../domain/webhooks/webhook-resend.decider.js';
import { MAX_WEBHOOKS_PER_ACCOUNT } from '../../../domain/webhooks/webhook-registry.decider.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../../domain/webhooks/webhook-envelope.js';
import { noticeHtml } from './account-notice.js';
import { formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { raw, type SafeHtml } from '../pages/html.js';
import { webhookPage } from './webhook.page.js';
import { registerPage, webhooksPage } from './webhooks.page.js';

/** The account's plan, and whether it includes webhooks. */
async function plan(r: AccountRequest): Promise<{ tier: Tier; allowed: boolean }> {
  const tier = stateAt(await r.services.ledger.state(r.who.account_id), r.services.clock.now()).tier;
  return { tier, allowed: tierAtLeast(tier, RATE_CARD.webhooks.min_tier) };
}

/** 403 `tier` below quant, as the API answers: registering, testing, enabling, rotating and resending need the plan. */
export async function requireWebhooksPlan(r: AccountRequest): Promise<void> {
  requireTier((await plan(r)).tier, 'webhooks');
}

async function ownWebhooks(r: AccountRequest): Promise<WebhookListItem[]> {
  const { services, who } = r;
  return (await listWebhooks(services.reads, who.account_id, await webhooksCaughtUp(services.reads, services.events, who.account_id))).webhooks;
}

/** The account's webhook the path names, or null (unknown, deleted, another account's). */
export async function findOwnWebhook(r: AccountRequest): Promise<WebhookListItem | null> {
  const id = Number(r.req.params['id']);
  if (!Number.isSafeInteger(id)) return null;
  return (await ownWebhooks(r)).find((w) => w.id === id) ?? null;
}

export async function ownWebhook(r: AccountRequest): Promise<WebhookListItem> {
  const hook = await findOwnWebhook(r);
  if (!hook) throw notFound('No such webhook on this account');
  return hook;
}

/** After an action: back to a page of the webhooks, which tells what was done. */
export function backTo(r: AccountRequest, path: string, text: string): void {
  r.web.notify(r.res, { kind: 'success', text });
  r.res.redirect(303, path);
}

/** `YYYY-MM-DDTHH:MM`, UTC: a `datetime-local` field's value. */
const minute = (d: Date) => d.toISOString().slice(0, 16);

/** The webhook's page: the secret an action left for it or the notice, its messages of the last 30 days. */
export async function sendWebhookPage(r: AccountRequest, hook: WebhookListItem, answer: { notice?: SafeHtml; status?: number } = {}): Promise<void> {
  const { services, who, req, res, web } = r;
  const now = services.transportClock.now();
  const since = new Date(now.getTime() - RESEND_WINDOW_MS).toISOString();
  const messages = await listDeliveredMessages(services.reads, who.account_id, hook.id, since, services.events);
  const shown = web.takeShownSecret(req, res);
  const left = web.takeNotice(req, res);
  const notice = answer.notice ?? (left ? noticeHtml(left) : undefined);
  const secret = shown && shown.webhook_id === hook.id ? shown : null;
  const body = webhookPage({ hook, messages, dayAgo: minute(new Date(now.getTime() - 86_400_000)), notice, secret });
  sendAccountPage(res, answer.status ?? 200, `Webhook ${hook.id}`, body, COPY_HEAD);
}

const COPY_HEAD = raw('<script src="/account/assets/copy.js" defer></script>');

export async function sendWebhooksPage(r: AccountRequest, answer: { notice?: SafeHtml; status?: number } = {}): Promise<void> {
  const [webhooks, { tier, allowed }] = await Promise.all([ownWebhooks(r), plan(r)]);
  const left = r.web.takeNotice(r.req, r.res);
  const notice = answer.notice ?? (left ? noticeHtml(left) : undefined);
  sendAccountPage(r.res, answer.status ?? 200, 'Webhooks', webhooksPage({ webhooks, allowed, tierName: tierName(tier), max: MAX_WEBHOOKS_PER_ACCOUNT, notice }));
}

export const showWebhooks = (r: AccountRequest): Promise<void> => sendWebhooksPage(r);

function eventTypeOf(value: unknown): WebhookEventType {
  const t = typeof value === 'string' ? value : '';
  if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t)) throw new AppError('bad_request', `Choose score_move or divergence_event (got ${JSON.stringify(t)})`);
  return t as WebhookEventType;
}

/** `GET /account/webhooks/new?url=&event_type=`: what the registration does, before the form that registers. */
export async function confirmRegister(r: AccountRequest): Promise<void> {
  await requireWebhooksPlan(r);
  const url = typeof r.req.query['url'] === 'string' ? r.req.query['url'].trim() : '';
  if (url === '') throw new AppError('bad_request', 'Give the https URL of your endpoint');
  const eventType = eventTypeOf(r.req.query['event_type']);
  sendAccountPage(r.res, 200, 'Register a webhook', registerPage({ url, eventType, csrf: r.web.csrfToken(r.req, r.res) }));
}

export async function registerOwnWebhook(r: AccountRequest): Promise<void> {
  await requireWebhooksPlan(r);
  const { services } = r;
  const deps = { ...services, allowSubnets: services.config.webhookAllowSubnets, sender: services.webhookSender };
  const made = await registerWebhook(deps, { accountId: r.who.account_id, eventType: eventTypeOf(formField(r.req, 'event_type')), url: formField(r.req, 'url').trim() });
  r.web.showSecretOnce(r.res, { webhook_id: made.id, secret: made.secret, lead: `Webhook ${made.id} is registered: it sends ${made.event_type} events to ${made.url}.` });
  r.res.redirect(303, `/account/webhooks/${made.id}#new-secret-note`);
}
