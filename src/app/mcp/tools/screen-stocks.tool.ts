import { z } from 'zod';
import { run as screenStocks } from '../../../../queries/get-screener/get-screener.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `screen_stocks`, the twin of GET /v1/screener. */
export const screenStocksTool = twinTool({
  name: toolNameOf('screener'),
  title: 'Rank stocks by service_score',
  description: describeTool(
    'screener',
    'The whole universe you can see, ranked by service_score descending, as of your as-of date. Free keys see the top100 universe, 7 days delayed.',
  ),
  inputSchema: {
    min_score: restArg(z.number().int().describe('Integer 0-100: only rows with service_score at or above it.')),
    limit: restArg(z.number().int().describe('Integer 1-650 (default 100): the most rows to return; above 650 is refused (limit_exceeded).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ min_score, limit }, ctx) => callTwin(ctx, 'screener', (call) => screenStocks(call, min_score, limit)),
});
