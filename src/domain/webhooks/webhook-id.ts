import { parseIntParam } from '../../core/int-param.js';

/**
 * The `webhook_id` path parameter of `/v1/webhooks/{webhook_id}…`: a positive integer, else a 400
 * naming the parameter, worded like every other integer parameter. An integer that names no
 * webhook of the caller's is the caller's 404, decided where the webhook is looked up.
 */
export const parseWebhookId = (text: string): number =>
  parseIntParam('webhook_id', text, { default: 0, min: 1, max: Number.MAX_SAFE_INTEGER, aboveMax: 'bad_request' });
