import { z } from 'zod';
import { run as getScoreHistory } from '../../../../queries/get-score-history/get-score-history.controller.js';
import { callTwin, describeTool, requiredRestArg, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_score_history`, the twin of GET /v1/scores/{ticker}/history. */
export const getScoreHistoryTool = twinTool({
  name: toolNameOf('history'),
  title: 'Score history of one stock',
  description: describeTool(
    'history',
    'Daily score history of one stock, oldest first. start is raised to your tier\'s history floor and end lowered to your as-of date, silently. With as_known_at, each row is returned as it was published at that instant (no look-ahead from later restatements).',
  ),
  inputSchema: {
    ticker: requiredRestArg(z.string().describe('Stock symbol, case-insensitive, at most 12 characters, e.g. "AAPL".')),
    start: restArg(z.string().describe('First date, YYYY-MM-DD; clamped silently to your tier\'s history floor.')),
    end: restArg(z.string().describe('Last date, YYYY-MM-DD; clamped to your as-of date.')),
    as_known_at: restArg(
      z
        .string()
        .describe('An instant (ISO 8601 such as 2024-05-01T21:00:00Z, or YYYY-MM-DD for 00:00 UTC): rows as published at that instant.'),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ ticker, start, end, as_known_at }, ctx) => callTwin(ctx, 'history', (call) => getScoreHistory(call, ticker, start, end, as_known_at)),
});
