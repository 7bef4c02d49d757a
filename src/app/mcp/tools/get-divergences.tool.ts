import { z } from 'zod';
import { run as getDivergence } from '../../../../queries/get-divergence/get-divergence.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_divergences`, the twin of GET /v1/divergence. */
export const getDivergencesTool = twinTool({
  name: toolNameOf('divergence'),
  title: 'Widest divergence gaps',
  description: describeTool(
    'divergence',
    'The widest gaps between main_street and wall_street on your as-of date, ranked by |gap|, with each gap\'s percentile and days at an extreme. Builder keys and higher also get why_now research.',
  ),
  inputSchema: {
    // A string as in REST (any case; anything else is a bad_request problem), not an enum,
    // so a wrong value gets the same refusal on both faces. null means both, as in the spec.
    direction: restArg(
      z.string().nullable().describe('"bull" (main_street above wall_street) or "bear" (below), any case; absent or null = both.'),
    ),
    limit: restArg(z.number().int().describe('Integer 1-100 (default 25): the most rows to return; above 100 is refused (limit_exceeded).')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ direction, limit }, ctx) => callTwin(ctx, 'divergence', (call) => getDivergence(call, direction, limit)),
});
