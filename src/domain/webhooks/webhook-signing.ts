import { createHmac, randomBytes } from 'node:crypto';

/** The Standard Webhooks prefix of a serialised secret (https://www.standardwebhooks.com/). */
export const SECRET_PREFIX = 'whsec_';
/** Random bytes behind the prefix: the spec asks for 24 to 64. */
export const SECRET_BYTES = 32;

/**
 * What the API returns as `signing` when a webhook is registered: both schemes, and what each
 * one keys the HMAC with. docs/webhooks.md shows a receiver checking both.
 */
export const SIGNING_STATEMENT =
  'Each delivery is signed twice over the raw request body. ' +
  'X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret string exactly as shown (its UTF-8 bytes, whsec_ prefix included). ' +
  'Standard Webhooks (https://www.standardwebhooks.com/): webhook-signature is "v1," followed by the base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}", ' +
  'keyed with the base64-decoded part of the secret after whsec_; any Standard Webhooks library verifies it when given the secret as shown. ' +
  'Verify against the raw bytes before parsing the JSON, and reject a webhook-timestamp more than 5 minutes from your clock. ' +
  'After POST /v1/webhooks/{webhook_id}/rotate-secret, until its overlap ends, webhook-signature carries a second "v1," signature made with the previous secret (accept either) and X-Service-Signature-Previous the hex HMAC with the previous secret.';

/** The headers of one delivery attempt, lower case as HTTP/2 and Node's `req.headers` have them. */
export interface DeliveryHeaders {
  'content-type': 'application/json';
  /** Hex HMAC-SHA256 of the body, keyed with the whole secret string. */
  'x-service-signature': string;
  /** The message id: the same on every retry of one message, so a receiver can deduplicate. */
  'webhook-id': string;
  /** The attempt's time, integer Unix seconds. */
  'webhook-timestamp': string;
  /**
   * `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`, keyed with the decoded secret;
   * during a rotation's overlap a second one, space separated, keyed with the previous secret.
   */
  'webhook-signature': string;
  /** During a rotation's overlap: `x-service-signature` keyed with the previous secret. */
  'x-service-signature-previous'?: string;
}

/** The secrets of one delivery: the current one, and during a rotation's overlap the one it replaced. */
export interface SigningSecrets {
  current: string;
  previous: string | null;
}

/** A new webhook secret: `whsec_` + base64 of 32 random bytes. Shown to the customer once. */
export function newWebhookSecret(random: (n: number) => Buffer = randomBytes): string {
  return SECRET_PREFIX + random(SECRET_BYTES).toString('base64');
}

/**
 * Every header of one delivery attempt of `rawBody` (the exact bytes sent).
 *
 * `X-Service-Signature` is keyed with the secret string exactly as returned to the customer,
 * `whsec_` included, so a receiver needs nothing but an HMAC over the body to check it; the
 * Standard Webhooks signature is keyed, as that spec says, with the bytes the base64 after
 * `whsec_` decodes to. The first covers the body only and can be replayed; the second covers
 * the id and time as well. `timestamp` is the attempt's time: a retry is signed anew.
 */
export function deliveryHeaders(secrets: string | SigningSecrets, messageId: string, timestamp: Date, rawBody: string | Uint8Array): DeliveryHeaders {
  const { current, previous } = typeof secrets === 'string' ? { current: secrets, previous: null } : secrets;
  if (messageId === '') throw new RangeError('a webhook message id must not be empty');
  const seconds = String(Math.floor(timestamp.getTime() / 1000));
  const standard = (secret: string) => `v1,${createHmac('sha256', secretKey(secret)).update(`${messageId}.${seconds}.`).update(rawBody).digest('base64')}`;
  const hex = (secret: string) => createHmac('sha256', secret).update(rawBody).digest('hex');
  const headers: DeliveryHeaders = {
    'content-type': 'application/json',
    'x-service-signature': hex(current),
    'webhook-id': messageId,
    'webhook-timestamp': seconds,
    // Standard Webhooks: a receiver accepts the delivery when any one of the signatures verifies.
    'webhook-signature': previous === null ? standard(current) : `${standard(current)} ${standard(previous)}`,
  };
  if (previous !== null) headers['x-service-signature-previous'] = hex(previous);
  return headers;
}

/**
 * The Standard Webhooks key of a secret. Buffer's base64 decoder skips characters it does not
 * know, so a damaged secret would sign with a wrong key without a word: it must re-encode to
 * exactly what it was.
 */
function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : '';
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0 || key.toString('base64') !== encoded) throw new RangeError('a webhook secret is whsec_ followed by base64');
  return key;
}
