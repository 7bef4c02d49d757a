import { run as getRequestLog } from '../../../../queries/get-request-log/get-request-log.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_request_log`, the twin of GET /v1/requests. */
export const getRequestLogTool = twinTool({
  key: 'requests',
  title: 'Your request log',
  description:
    'Your account\'s calls of the last 30 days, REST and MCP, answered and refused alike, newest first: time, key (name and prefix), operation (rate-card key, MCP tool, method and path), status and the refusal\'s problem code, credits charged, latency and request id. Filter by key (its prefix sk_live_…), status (2xx, 4xx, 5xx), operation, day (YYYY-MM-DD, UTC) or request_id; pass next_cursor back as cursor for the next, older page.',
  run: (filters, call) => getRequestLog(call, filters),
});
