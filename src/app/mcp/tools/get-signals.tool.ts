import { run as getSignals } from '../../../../queries/get-signals/get-signals.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_signals`, the twin of GET /v1/signals. */
export const getSignalsTool = twinTool({
  key: 'signals',
  title: 'Latest research signals',
  description:
    'The latest research signals (demand surges, divergences and the like, with their tickers and themes), newest first. Free keys see them delayed like their data and only those whose tickers are all in the top100 universe.',
  run: ({ limit }, call) => getSignals(call, limit),
});
