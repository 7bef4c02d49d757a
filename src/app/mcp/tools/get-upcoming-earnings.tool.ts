import { z } from 'zod';
import { run as getEarnings } from '../../../../queries/get-earnings/get-earnings.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_upcoming_earnings`, the twin of GET /v1/earnings. */
export const getUpcomingEarningsTool = twinTool({
  name: toolNameOf('earnings'),
  title: 'Upcoming earnings reporters',
  description: describeTool(
    'earnings',
    'Stocks reporting earnings in the next `days` days (today included), with their current scores going in.',
  ),
  inputSchema: {
    days: restArg(
      z.number().int().describe('Integer 0-60 (default 14): the horizon in calendar days (0 = today only); above 60 is refused (limit_exceeded).'),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ days }, ctx) => callTwin(ctx, 'earnings', (call) => getEarnings(call, days)),
});
