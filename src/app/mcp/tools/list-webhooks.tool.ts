import { runList as listWebhooks } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { twinTool } from '../rest-twin.js';

/** `list_webhooks`, the twin of GET /v1/webhooks. Registering, testing and deleting stay REST's: tools only read. */
export const listWebhooksTool = twinTool({
  key: 'webhooks',
  title: 'Your webhooks',
  description:
    'Your webhooks (deleted ones are not listed): each one\'s id, event type, url, whether it is active, its run of consecutive failures and its last attempt. Never the secret. Registering and managing webhooks is done over REST (POST /v1/webhooks).',
  run: (_args, call) => listWebhooks(call),
});
