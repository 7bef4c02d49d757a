import { run as getDivergenceEvents } from '../../../../queries/get-divergence-events/get-divergence-events.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_divergence_events`, the twin of GET /v1/divergence/events. */
export const getDivergenceEventsTool = twinTool({
  key: 'divergence_events',
  title: 'Closed divergence events with outcomes',
  description:
    'Closed divergence events with their dated outcome: the close price on the flag date and on the close date, the percent change between them and the days in between. Newest flag_date first.',
  run: ({ since }, call) => getDivergenceEvents(call, since),
});
