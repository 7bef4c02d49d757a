import { run as getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_usage_ledger`, the twin of GET /v1/usage/ledger. */
export const getUsageLedgerTool = twinTool({
  key: 'usage_ledger',
  title: 'Your credit ledger',
  description:
    'Your own credit ledger, newest first, one page at a time: every charge (request id, rate key, channel rest or mcp, cost and where it was drawn from), pack, plan change and usage alert, each with its SHA-256 hash and the previous entry\'s prev_hash so the chain can be verified. Pass next_cursor back as cursor for the next, older page; null on the last.',
  run: ({ month, limit, cursor }, call) => getUsageLedger(call, month, limit, cursor),
});
