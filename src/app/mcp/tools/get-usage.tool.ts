import { run as getUsage } from '../../../../queries/get-usage/get-usage.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_usage`, the twin of GET /v1/usage: how an agent reads its own balance and prices. */
export const getUsageTool = twinTool({
  key: 'usage',
  title: 'Your plan, credit balance and rate card',
  description:
    'Your plan, this month\'s usage, what is left (credits_remaining of the allowance, null when unmetered, plus prepaid_credits), overage, when the allowance resets, your entitlements, and the live credit cost of every endpoint (rate_card, keyed by rate key). Every tool result also carries the balance as _meta.credits_remaining.',
  run: (_args, call) => getUsage(call),
});
