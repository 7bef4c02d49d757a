import { z } from 'zod';
import { run as getDivergenceEvents } from '../../../../queries/get-divergence-events/get-divergence-events.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_divergence_events`, the twin of GET /v1/divergence/events. */
export const getDivergenceEventsTool = twinTool({
  name: toolNameOf('divergence_events'),
  title: 'Closed divergence events with outcomes',
  description: describeTool(
    'divergence_events',
    'Closed divergence events with their dated outcome: the close price on the flag date and on the close date, the percent change between them and the days in between. Newest flag_date first.',
  ),
  inputSchema: {
    since: restArg(z.string().describe('Date YYYY-MM-DD: only events flagged on or after it (default 365 days before today).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ since }, ctx) => callTwin(ctx, 'divergence_events', (call) => getDivergenceEvents(call, since)),
});
