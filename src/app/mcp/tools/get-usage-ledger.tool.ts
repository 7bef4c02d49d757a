import { z } from 'zod';
import { run as getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_usage_ledger`, the twin of GET /v1/usage/ledger. */
export const getUsageLedgerTool = twinTool({
  name: toolNameOf('usage_ledger'),
  title: 'Your credit ledger',
  description: describeTool(
    'usage_ledger',
    'Your own credit ledger, newest first, one page at a time: every charge (request id, rate key, channel rest or mcp, cost and where it was drawn from), pack, plan change and usage alert, each with its SHA-256 hash and the previous entry\'s prev_hash so the chain can be verified. Pass next_cursor back as cursor for the next, older page; null on the last.',
  ),
  inputSchema: {
    month: restArg(z.string().describe('Calendar month YYYY-MM (UTC); absent: every month.')),
    limit: restArg(z.number().int().describe('Integer 1-1000 (default 100): entries per page; above 1000 is refused (limit_exceeded).')),
    cursor: restArg(z.string().describe('The next_cursor of the previous page (same month).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ month, limit, cursor }, ctx) => callTwin(ctx, 'usage_ledger', (call) => getUsageLedger(call, month, limit, cursor)),
});
