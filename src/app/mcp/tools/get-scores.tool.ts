import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { run as getScore } from '../../../../queries/get-score/get-score.controller.js';
import { callTwin, describeTool, requiredRestArg, toolNameOf, type ToolContext } from '../rest-twin.js';

/** `get_scores`, the twin of GET /v1/scores/{ticker}. */
export function registerGetScores(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    toolNameOf('scores'),
    {
      title: 'Scores of one stock',
      description: describeTool(
        'scores',
        'The Main-Street / Wall-Street scores of one stock as of your as-of date (the latest published day; free keys trail 7 days).',
      ),
      inputSchema: {
        ticker: requiredRestArg(z.string().describe('Stock symbol, case-insensitive, at most 12 characters, e.g. "AAPL".')),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ ticker }) => callTwin(ctx, 'scores', (call) => getScore(call, ticker)),
  );
}
