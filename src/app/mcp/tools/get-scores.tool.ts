import { z } from 'zod';
import { run as getScore } from '../../../../queries/get-score/get-score.controller.js';
import { callTwin, describeTool, requiredRestArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_scores`, the twin of GET /v1/scores/{ticker}. */
export const getScoresTool = twinTool({
  name: toolNameOf('scores'),
  title: 'Scores of one stock',
  description: describeTool(
    'scores',
    'The Main-Street / Wall-Street scores of one stock as of your as-of date (the latest published day; free keys trail 7 days).',
  ),
  inputSchema: {
    ticker: requiredRestArg(z.string().describe('Stock symbol, case-insensitive, at most 12 characters, e.g. "AAPL".')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ ticker }, ctx) => callTwin(ctx, 'scores', (call) => getScore(call, ticker)),
});
