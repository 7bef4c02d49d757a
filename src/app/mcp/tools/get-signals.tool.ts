import { z } from 'zod';
import { run as getSignals } from '../../../../queries/get-signals/get-signals.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_signals`, the twin of GET /v1/signals. */
export const getSignalsTool = twinTool({
  name: toolNameOf('signals'),
  title: 'Latest research signals',
  description: describeTool(
    'signals',
    'The latest research signals (demand surges, divergences and the like, with their tickers and themes), newest first. Free keys see them delayed like their data and only those whose tickers are all in the top100 universe.',
  ),
  inputSchema: {
    limit: restArg(z.number().int().describe('Integer 1-200 (default 50): the most signals to return; above 200 is refused (limit_exceeded).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ limit }, ctx) => callTwin(ctx, 'signals', (call) => getSignals(call, limit)),
});
