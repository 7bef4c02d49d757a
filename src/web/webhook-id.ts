import { parseIntParam } from './int-param.js';
import { badRequest } from '../core/errors.js';

/**
 * The `webhook_id` path parameter of `/v1/webhooks/{webhook_id}…`: a positive integer, else a 400
 * naming the parameter, worded like every other integer parameter. An integer that names no
 * webhook of the caller's is the caller's 404, decided where the webhook is looked up.
 */
/** The largest `webhook_id` (the document's `maximum`): ids are JSON numbers, exact up to 2^53 - 1. */
export const MAX_WEBHOOK_ID = Number.MAX_SAFE_INTEGER;

export function parseWebhookId(text: string): number {
  // A path parameter has no default: an empty one is refused like any other non-integer.
  if (text.trim() === '') throw badRequest('webhook_id must be a positive integer (got "")', { errors: [{ parameter: 'webhook_id', message: 'must be a positive integer' }] });
  return parseIntParam('webhook_id', text, { default: 0, min: 1, max: MAX_WEBHOOK_ID, aboveMax: 'bad_request' });
}
