import { badRequest } from '../../core/errors.js';

const DIGITS = /^\d{1,15}$/;

/**
 * The `webhook_id` path parameter of `/v1/webhooks/{webhook_id}…`: a positive integer, else a 400
 * naming the parameter. An integer that names no webhook of the caller's (0 included) is the
 * caller's 404, decided where the webhook is looked up.
 */
export function parseWebhookId(text: string): number {
  const value = text.trim();
  if (!DIGITS.test(value)) {
    const message = 'must be a positive integer';
    throw badRequest(`webhook_id ${message} (got ${JSON.stringify(text.slice(0, 40))})`, { errors: [{ parameter: 'webhook_id', message }] });
  }
  return Number(value);
}
