import { run as getCoverage } from '../../../../queries/get-coverage/get-coverage.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_coverage`, the twin of GET /v1/coverage. */
export const getCoverageTool = twinTool({
  key: 'coverage',
  title: 'Tickers your key can see',
  description:
    'The symbols your key can query, sorted, and the universe it sees (all or top100).',
  run: ({ since }, call) => getCoverage(call, since),
});
