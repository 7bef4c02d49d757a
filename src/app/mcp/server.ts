import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolContext } from './rest-twin.js';
import { registerGetScores } from './tools/get-scores.tool.js';
import { registerGetScoreHistory } from './tools/get-score-history.tool.js';
import { registerScreenStocks } from './tools/screen-stocks.tool.js';
import { registerGetDivergences } from './tools/get-divergences.tool.js';
import { registerGetUpcomingEarnings } from './tools/get-upcoming-earnings.tool.js';
import { registerGetDivergenceEvents } from './tools/get-divergence-events.tool.js';
import { registerGetTrackRecord } from './tools/get-track-record.tool.js';
import { registerGetDatasetInfo } from './tools/get-dataset-info.tool.js';

const TOOLS: readonly ((server: McpServer, ctx: ToolContext) => void)[] = [
  registerGetScores,
  registerGetScoreHistory,
  registerScreenStocks,
  registerGetDivergences,
  registerGetUpcomingEarnings,
  registerGetDivergenceEvents,
  registerGetTrackRecord,
  registerGetDatasetInfo,
];

/**
 * The MCP server for one HTTP request of one authenticated caller (stateless mode: a server and
 * a transport per POST). Every tool is the twin of a REST endpoint and runs its query;
 * `ctx.creditsRemaining` sets the response's `X-Credits-Remaining` after a tool call.
 */
export function createMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer(
    { name: 'scores-service', title: 'Main-Street / Wall-Street scores', version: '0.1.0' },
    {
      instructions:
        'Daily consumer-demand (main_street) vs analyst-sentiment (wall_street) scores of US stocks. Each tool mirrors a REST endpoint and draws the same credits from your account.',
    },
  );
  for (const register of TOOLS) register(server, ctx);
  return server;
}
