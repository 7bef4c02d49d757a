import { run as getOpenDivergences } from '../../../../queries/get-divergence-open/get-divergence-open.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_open_divergences`, the twin of GET /v1/divergence/open. */
export const getOpenDivergencesTool = twinTool({
  key: 'divergence_open',
  title: 'Open divergence extremes',
  description:
    'Divergence events still open on your as-of date, newest flag_date first: the gap and price when each was flagged, its gap and percentile now, and the days it has been open.',
  run: (_args, call) => getOpenDivergences(call),
});
