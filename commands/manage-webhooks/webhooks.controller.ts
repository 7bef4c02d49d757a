import { Body, Delete, Example, Header, Middlewares, Path, Post, Request, Response, Route, Security, SuccessResponse, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import type { WebhookEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { parseWebhookId } from '../../src/web/webhook-id.js';
import { timestampOf } from '../../src/web/timestamp.js';
import { CommandController } from '../shared/command-controller.js';
import { jsonBody } from '../shared/json-body.js';
import { deleteWebhook, reactivateWebhook, registerWebhook, resendDeliveries, resendKey, rotateWebhookSecret, sendTestDelivery } from './webhooks.handler.js';
import { parseDeliveryId, parseIdempotencyKey, parseSince, resendResponse, type ResendFailedRequest, type ResendResponse } from './resend-request.js';

export interface RegisterWebhookRequest {
  /** What the webhook is sent: `score_move` or `divergence_event`. */
  event_type: 'divergence_event' | 'score_move';
  /**
   * Your receiver: `https` only, no user name or password, at most 2,048 characters; it must not
   * resolve to a private, loopback or otherwise non-public address.
   * @example "https://hooks.example.com/scores"
   * @format uri
   */
  url: string;
}

/** The body of `/test` and `/enable`: an empty JSON object (any field is refused), or no body at all. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- tsoa documents and checks it as an object without properties
export interface NoFieldsRequest {}

export interface RegisteredWebhookResponse {
  /** @isInt */
  id: number;
  event_type: 'divergence_event' | 'score_move';
  /**
   * The URL as stored (parsed: the host in lower case, a `/` path when none was given).
   * @format uri
   */
  url: string;
  /** `whsec_` and the base64 of 32 random bytes. Shown once: keep it, deliveries are signed with it. */
  secret: string;
  /** How deliveries are signed with the secret. */
  signing: string;
}

export interface WebhookOkResponse {
  ok: true;
}

export interface TestDeliveryResponse {
  /** True when the receiver answered 2xx. */
  ok: boolean;
  /**
   * The receiver's HTTP status; null when no answer came (time-out, connection, TLS or address error).
   * @isInt
   */
  status_code: number | null;
  /** Why the attempt failed, in the service's own words (never the receiver's); null on success. */
  error: string | null;
  /**
   * The registered URL.
   * @format uri
   */
  delivered_to: string;
  /** The header carrying the hex HMAC-SHA256 of the raw body (the Standard Webhooks headers come too). */
  signature_header: string;
  /** The envelope sent: one example event of the webhook's type, marked `test`. */
  payload: WebhookEnvelope;
}

export interface RotateSecretRequest {
  /**
   * Hours during which every delivery is also signed with the secret being replaced (a second
   * `v1,` signature in `webhook-signature`, and `X-Service-Signature-Previous`), so your receiver
   * can switch secrets without missing a delivery. 0: the old secret stops signing now. Default 24.
   * @isInt
   * @minimum 0
   * @maximum 168
   */
  overlap_hours?: number;
}

export interface RotatedSecretResponse {
  /** @isInt */
  id: number;
  /** The new secret: `whsec_` and the base64 of 32 random bytes. Shown once. */
  secret: string;
  /**
   * Until when deliveries also carry the previous secret's signature, `YYYY-MM-DD HH:MM:SS` UTC.
   * @format timestamp
   */
  previous_secret_expires_at: string;
  /** How deliveries are signed with the secret. */
  signing: string;
}

export interface EnabledWebhookResponse {
  ok: true;
  /** @isInt */
  id: number;
  /** Always true: the webhook is active (it may have been already; nothing changes then). */
  is_active: true;
}

/**
 * The write side of `/v1/webhooks` (the reads are `queries/get-webhooks`). Free for quant and
 * higher, like every webhook endpoint.
 */
@Route('v1/webhooks')
@Tags('Webhooks')
@Security('api_key', ['webhooks'])
export class ManageWebhooksController extends CommandController {
  /**
   * Registers an HTTPS endpoint to be sent the events of one type (docs/webhooks.md). Answers 201
   * with the webhook's `secret`, shown this once: every delivery is signed with it, as `signing`
   * says. At most 10 webhooks per account. Each publication is delivered once per webhook, retried
   * on failure; `POST /v1/webhooks/{webhook_id}/test` sends an example now. Free.
   * @summary Register a webhook
   */
  @Post()
  @Middlewares(jsonBody)
  @SuccessResponse(201, 'Registered')
  @Example<RegisteredWebhookResponse>({
    id: 7,
    event_type: 'score_move',
    url: 'https://hooks.example.com/scores',
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    signing: 'Each delivery is signed twice over the raw request body. X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret string exactly as shown (…)',
  })
  @Response<ProblemDetails>(400, 'Body not JSON, a field missing, unknown or of the wrong type, an event_type other than score_move or divergence_event, or a url refused (not https, credentials, a forbidden address, over 2,048 characters)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json, or its charset or content encoding not supported (unsupported_media_type)')
  @Response<ProblemDetails>(422, 'The account has 10 webhooks already (limit_exceeded)')
  public async createWebhook(@Request() req: AuthedRequest, @Body() body: RegisterWebhookRequest): Promise<RegisteredWebhookResponse> {
    const registered = await this.serve(req, (caller) =>
      registerWebhook(
        { events: this.ctx.events, clock: this.ctx.clock, ids: this.ctx.ids, personal: this.ctx.personal, allowSubnets: this.ctx.webhookAllowSubnets, sender: this.ctx.webhookSender },
        { accountId: caller.account_id, eventType: body.event_type, url: body.url },
      ),
    );
    this.setStatus(201);
    return registered;
  }

  /**
   * Deletes one of your webhooks: nothing more is sent to it, messages still owed are dropped, and
   * its place under the limit of 10 is free again. Its id is never given again. Free.
   * @summary Delete a webhook
   * @param webhook_id The webhook's `id`.
   * @example webhook_id 7
   */
  @Delete('{webhook_id}')
  @Example<WebhookOkResponse>({ ok: true })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No webhook of yours with that id: unknown, deleted or another account\'s (not_found)')
  public async deleteWebhook(@Request() req: AuthedRequest, @Path() webhook_id: string): Promise<WebhookOkResponse> {
    const id = parseWebhookId(webhook_id);
    return this.serve(req, (caller) => deleteWebhook(this.ctx, caller.account_id, id));
  }

  /**
   * Sends one example event of the webhook's type, marked `test`, signed like every delivery, once
   * (no retry), and answers what happened. Works on a deactivated webhook too, to check the
   * endpoint before `POST /v1/webhooks/{webhook_id}/enable`. The attempt is listed in
   * `GET /v1/webhooks/{webhook_id}/deliveries` (kind `test`); a failure counts in
   * `consecutive_failures` but never deactivates the webhook. Body: none, or an empty JSON object. Free.
   * @summary Send a test delivery
   * @param webhook_id The webhook's `id`.
   * @example webhook_id 7
   */
  @Post('{webhook_id}/test')
  @Middlewares(jsonBody)
  @Example<TestDeliveryResponse>({
    ok: true,
    status_code: 204,
    error: null,
    delivered_to: 'https://hooks.example.com/scores',
    signature_header: 'X-Service-Signature',
    payload: {
      events: [{ type: 'score_move', ticker: 'COST', date: '2019-06-13', service_score: 71.4, prior_score: 60.2, delta: 11.2, test: true }],
      sent_at: '2024-03-01T12:00:00.123Z',
      source: 'scores-service',
      test: true,
    },
  })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, or a body that is not an empty JSON object')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No webhook of yours with that id: unknown, deleted or another account\'s (not_found)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async testWebhook(@Request() req: AuthedRequest, @Path() webhook_id: string, @Body() body?: NoFieldsRequest): Promise<TestDeliveryResponse> {
    void body;
    const id = parseWebhookId(webhook_id);
    return this.serve(req, (caller) => sendTestDelivery({ ...this.ctx, sender: this.ctx.webhookSender }, caller.account_id, id));
  }

  /**
   * Replaces the webhook's signing secret with a new one, shown this once. During the overlap
   * (`overlap_hours`, default 24) every delivery is signed with both secrets: `webhook-signature`
   * carries two `v1,` signatures (Standard Webhooks libraries accept either) and
   * `X-Service-Signature-Previous` the hex HMAC with the old secret beside `X-Service-Signature`
   * with the new one. Rotate when a secret may have leaked, or on a schedule. Free.
   * @summary Rotate a webhook's signing secret
   * @param webhook_id The webhook's `id`.
   * @example webhook_id 7
   */
  @Post('{webhook_id}/rotate-secret')
  @Middlewares(jsonBody)
  @Example<RotatedSecretResponse>({
    id: 7,
    secret: 'whsec_pM0c3rY2Tz6bT5N3hH8rXo1qA9vK2wLmE4sD7fG0jB8=',
    previous_secret_expires_at: '2024-03-02 12:00:00',
    signing: 'Each delivery is signed twice over the raw request body. X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret string exactly as shown (…)',
  })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, or overlap_hours not a whole number from 0 to 168, or an unknown field')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No webhook of yours with that id: unknown, deleted or another account\'s (not_found)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async rotateWebhookSecret(@Request() req: AuthedRequest, @Path() webhook_id: string, @Body() body?: RotateSecretRequest): Promise<RotatedSecretResponse> {
    const id = parseWebhookId(webhook_id);
    const rotated = await this.serve(req, (caller) => rotateWebhookSecret(this.ctx, caller.account_id, id, body?.overlap_hours));
    return { ...rotated, previous_secret_expires_at: timestampOf(rotated.previous_secret_expires_at) };
  }

  /**
   * Makes a webhook deactivated after 5 days of failures or a `410 Gone` active again and resets
   * its failure run (`consecutive_failures` to 0). An active webhook stays as it is (the same
   * answer). Send a test delivery first to check the endpoint answers. Body: none,
   * or an empty JSON object. Free.
   * @summary Re-enable a deactivated webhook
   * @param webhook_id The webhook's `id`.
   * @example webhook_id 7
   */
  @Post('{webhook_id}/enable')
  @Middlewares(jsonBody)
  @Example<EnabledWebhookResponse>({ ok: true, id: 7, is_active: true })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, or a body that is not an empty JSON object')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No webhook of yours with that id: unknown, deleted or another account\'s (not_found)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async enableWebhook(@Request() req: AuthedRequest, @Path() webhook_id: string, @Body() body?: NoFieldsRequest): Promise<EnabledWebhookResponse> {
    void body;
    const id = parseWebhookId(webhook_id);
    return this.serve(req, async (caller) => {
      await reactivateWebhook(this.ctx, caller.account_id, id);
      return { ok: true as const, id, is_active: true as const };
    });
  }

  /**
   * Sends one delivery again: a message this webhook was sent (live or test, failed or not) within
   * the last 30 days, under its original message id (`webhook-id`: a receiver that keeps the ids it
   * processed skips one it has), with the same body, signed at the sending time. Answers 202: the
   * message is owed again and sent within seconds, then listed in
   * `GET /v1/webhooks/{webhook_id}/deliveries` as a further attempt of it, retried on failure like
   * a new message. One resend per `Idempotency-Key`: the same request sent again (a retry, or
   * another replica reached) answers the same, with `replayed: true`, and sends nothing more.
   * Body: none, or an empty JSON object. Free.
   * @summary Resend a delivery
   * @param webhook_id The webhook's `id`.
   * @param delivery_id The delivery's `message_id` (in `/deliveries`; the `webhook-id` header it was sent with).
   * @param idempotencyKey Any string of 1 to 255 visible ASCII characters; one resend per key and webhook, for 30 days. Without it, each request resends.
   * @example webhook_id 7
   * @example delivery_id "msg_5wJX0T3Qk2m8d9Yv1r4Z7A"
   */
  @Post('{webhook_id}/deliveries/{delivery_id}/resend')
  @Middlewares(jsonBody)
  @SuccessResponse(202, 'Owed again: sent within seconds')
  @Example<ResendResponse>({
    webhook_id: 7,
    message_ids: ['msg_5wJX0T3Qk2m8d9Yv1r4Z7A'],
    count: 1,
    since: null,
    idempotency_key: 'resend-2024-03-01-1',
    replayed: false,
    requested_at: '2024-03-01 12:00:00',
  })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, delivery_id not a message id, an Idempotency-Key that is empty, too long or not visible ASCII, or a body that is not an empty JSON object')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, "No webhook of yours with that id, or no delivery with that id of it: unknown, deleted or another account's (not_found)")
  @Response<ProblemDetails>(409, 'The webhook is deactivated (enable it first), or the Idempotency-Key was used for another resend of it (conflict)')
  @Response<ProblemDetails>(410, 'The delivery was made more than 30 days ago (delivery_expired)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async resendDelivery(
    @Request() req: AuthedRequest,
    @Path() webhook_id: string,
    @Path() delivery_id: string,
    @Header('Idempotency-Key') idempotencyKey?: string,
    @Body() body?: NoFieldsRequest,
  ): Promise<ResendResponse> {
    void body;
    return this.resend(req, parseWebhookId(webhook_id), { message_id: parseDeliveryId(delivery_id) }, idempotencyKey);
  }

  /**
   * Sends again every message of this webhook made since `since` (30 days back at most) whose last
   * attempt failed: what a receiver that was down missed. Each goes under its original message id,
   * signed at the sending time, as `POST …/deliveries/{delivery_id}/resend` sends one. Answers 202
   * with the message ids owed again (none: `count` 0). One resend per `Idempotency-Key`, as there.
   * Free.
   * @summary Resend every failed delivery since an instant
   * @param webhook_id The webhook's `id`.
   * @param idempotencyKey Any string of 1 to 255 visible ASCII characters; one resend per key and webhook, for 30 days. Without it, each request resends.
   * @example webhook_id 7
   */
  @Post('{webhook_id}/resend-failed')
  @Middlewares(jsonBody)
  @SuccessResponse(202, 'Owed again: sent within seconds')
  @Example<ResendResponse>({
    webhook_id: 7,
    message_ids: ['msg_5wJX0T3Qk2m8d9Yv1r4Z7A', 'msg_Qh3kVx9Lr0tB6mWc2yN8sE'],
    count: 2,
    since: '2024-02-29 00:00:00',
    idempotency_key: 'receiver-back-2024-03-01',
    replayed: false,
    requested_at: '2024-03-01 12:00:00',
  })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, since missing or not an instant, an unknown field, or an Idempotency-Key that is empty, too long or not visible ASCII')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, "No webhook of yours with that id: unknown, deleted or another account's (not_found)")
  @Response<ProblemDetails>(409, 'The webhook is deactivated (enable it first), or the Idempotency-Key was used for another resend of it (conflict)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async resendFailedDeliveries(
    @Request() req: AuthedRequest,
    @Path() webhook_id: string,
    @Body() body: ResendFailedRequest,
    @Header('Idempotency-Key') idempotencyKey?: string,
  ): Promise<ResendResponse> {
    return this.resend(req, parseWebhookId(webhook_id), { since: parseSince(body.since) }, idempotencyKey);
  }

  /** Both resends: decided under the request's key (or a fresh one), answered 202. */
  private async resend(req: AuthedRequest, id: number, what: { message_id: string } | { since: string }, idempotencyKey: string | undefined): Promise<ResendResponse> {
    const key = resendKey(this.ctx, parseIdempotencyKey(idempotencyKey));
    const outcome = await this.serve(req, (caller) => resendDeliveries(this.ctx, caller.account_id, id, what, key));
    this.setStatus(202);
    return resendResponse(id, outcome);
  }
}
