import { z } from 'zod';
import { run as getSocialHeat } from '../../../../queries/get-social-heat/get-social-heat.controller.js';
import { callTwin, describeTool, requiredRestArg, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_social_heat`, the twin of GET /v1/scores/social-heat/{ticker}. */
export const getSocialHeatTool = twinTool({
  name: toolNameOf('social_heat'),
  title: 'Social heat series of one stock',
  description: describeTool(
    'social_heat',
    'Daily social heat of one stock, oldest first: each day\'s US web visits as a percentage of the highest of that day and the trailing 365 days, computed live (see formula). start is raised to your tier\'s history floor and end lowered to your as-of date, silently.',
  ),
  inputSchema: {
    ticker: requiredRestArg(z.string().describe('Stock symbol, case-insensitive, at most 12 characters, e.g. "AAPL".')),
    start: restArg(z.string().describe('First date, YYYY-MM-DD; clamped silently to your tier\'s history floor.')),
    end: restArg(z.string().describe('Last date, YYYY-MM-DD; clamped to your as-of date.')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ ticker, start, end }, ctx) => callTwin(ctx, 'social_heat', (call) => getSocialHeat(call, ticker, start, end)),
});
