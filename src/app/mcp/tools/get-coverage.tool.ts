import { z } from 'zod';
import { run as getCoverage } from '../../../../queries/get-coverage/get-coverage.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_coverage`, the twin of GET /v1/coverage. */
export const getCoverageTool = twinTool({
  name: toolNameOf('coverage'),
  title: 'Tickers your key can see',
  description: describeTool('coverage', 'The symbols your key can query, sorted, and the universe it sees (all or top100).'),
  inputSchema: {
    since: restArg(z.string().describe('Date YYYY-MM-DD: only tickers with a score dated on or after it (up to your as-of date).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ since }, ctx) => callTwin(ctx, 'coverage', (call) => getCoverage(call, since)),
});
