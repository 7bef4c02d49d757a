import { run as getOpenDivergences } from '../../../../queries/get-divergence-open/get-divergence-open.controller.js';
import { callTwin, describeTool, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_open_divergences`, the twin of GET /v1/divergence/open. */
export const getOpenDivergencesTool = twinTool({
  name: toolNameOf('divergence_open'),
  title: 'Open divergence extremes',
  description: describeTool(
    'divergence_open',
    'Divergence events still open on your as-of date, newest flag_date first: the gap and price when each was flagged, its gap and percentile now, and the days it has been open.',
  ),
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_args, ctx) => callTwin(ctx, 'divergence_open', getOpenDivergences),
});
