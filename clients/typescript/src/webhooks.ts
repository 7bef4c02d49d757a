import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ScoresError } from './errors.js';
import type { components } from './generated/schema.js';

export type WebhookEnvelope = components['schemas']['WebhookEnvelope'];

export interface VerifyWebhookOptions {
  /** The webhook's secret as shown at registration (`whsec_…`). */
  secret: string;
  /** The raw request body, before any JSON parsing. */
  body: string | Uint8Array;
  /** The request's headers (a Headers, or node's IncomingHttpHeaders). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** Largest accepted distance of `webhook-timestamp` from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in milliseconds (default Date.now()). */
  now?: number;
}

export class WebhookVerificationError extends ScoresError {}

/** A header by its name in any case (`Webhook-Id` as well as `webhook-id`), from a Headers or a plain object. */
const header = (headers: VerifyWebhookOptions['headers'], name: string): string | null => {
  if (headers instanceof Headers) return headers.get(name);
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : headers[key];
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
};
const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/**
 * The Standard Webhooks signature, as the `standardwebhooks` library signs it. Its own `verify()`
 * has a fixed five-minute window on the wall clock: the timestamp is checked here
 * (`toleranceSeconds`, `now`), the signature by the library's `sign()`.
 */
function checkStandardSignature(options: VerifyWebhookOptions, body: Buffer, signatures: string): void {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  if (id === null || timestamp === null || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-id or webhook-timestamp missing or malformed');
  const skew = Math.abs((options.now ?? Date.now()) / 1000 - Number(timestamp));
  if (skew > (options.toleranceSeconds ?? 300)) throw new WebhookVerificationError(`webhook-timestamp is ${Math.round(skew)} s from now`);
  let expected: Buffer;
  try {
    expected = Buffer.from(new Webhook(options.secret).sign(id, new Date(Number(timestamp) * 1000), body));
  } catch (e) {
    throw new WebhookVerificationError(`the secret is not a whsec_ secret: ${(e as Error).message}`);
  }
  if (!signatures.split(' ').some((s) => same(Buffer.from(s), expected))) throw new WebhookVerificationError('webhook-signature does not match the body');
}

/**
 * Checks a webhook delivery's signatures against the raw body (docs/webhooks.md) and returns the
 * parsed envelope. Every signature present must hold, and at least one must be present:
 * - `X-Service-Signature`: lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8 text
 *   (during a secret rotation's overlap, `X-Service-Signature-Previous` is the same with the old
 *   secret: either matching holds);
 * - Standard Webhooks, checked with the `standardwebhooks` library: `webhook-signature` (`v1,<base64>`, space-separated) over
 *   `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the bytes after `whsec_`, and a
 *   `webhook-timestamp` within `toleranceSeconds` of now (keep the `webhook-id`s you processed to
 *   drop a replay).
 * Header names match in any case. Throws `WebhookVerificationError` otherwise.
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookEnvelope {
  const body = typeof options.body === 'string' ? Buffer.from(options.body, 'utf8') : Buffer.from(options.body);
  const service = header(options.headers, 'x-service-signature');
  const previous = header(options.headers, 'x-service-signature-previous');
  const signatures = header(options.headers, 'webhook-signature');
  if (service === null && signatures === null) throw new WebhookVerificationError('no signature header (X-Service-Signature or webhook-signature)');
  if (service !== null) {
    const expected = createHmac('sha256', Buffer.from(options.secret, 'utf8')).update(body).digest();
    const holds = (hex: string | null) => hex !== null && /^[0-9a-f]{64}$/.test(hex) && same(Buffer.from(hex, 'hex'), expected);
    if (!holds(service) && !holds(previous)) throw new WebhookVerificationError('X-Service-Signature does not match the body');
  }
  if (signatures !== null) checkStandardSignature(options, body, signatures);
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEnvelope;
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON');
  }
}
