import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ContextOf, TwinTool } from './rest-twin.js';
import { getScoresTool } from './tools/get-scores.tool.js';
import { getScoreHistoryTool } from './tools/get-score-history.tool.js';
import { screenStocksTool } from './tools/screen-stocks.tool.js';
import { getDivergencesTool } from './tools/get-divergences.tool.js';
import { getUpcomingEarningsTool } from './tools/get-upcoming-earnings.tool.js';
import { getDivergenceEventsTool } from './tools/get-divergence-events.tool.js';
import { getTrackRecordTool } from './tools/get-track-record.tool.js';
import { getDatasetInfoTool } from './tools/get-dataset-info.tool.js';

/** The eight tools, each the twin of a REST endpoint (module constants: built once per process). */
export const TOOLS: readonly TwinTool[] = [
  getScoresTool,
  getScoreHistoryTool,
  screenStocksTool,
  getDivergencesTool,
  getUpcomingEarningsTool,
  getDivergenceEventsTool,
  getTrackRecordTool,
  getDatasetInfoTool,
];

/**
 * The MCP server of the process: built once, with the tools, and serving every request of every
 * caller (see ./dispatcher.ts). Every tool is the twin of a REST endpoint and runs its query;
 * `contextOf` gives a tool call the caller and the HTTP response of the request it came in
 * (`creditsRemaining` sets that response's `X-Credits-Remaining`).
 */
export function createMcpServer(contextOf: ContextOf): McpServer {
  const server = new McpServer(
    { name: 'scores-service', title: 'Main-Street / Wall-Street scores', version: '0.1.0' },
    {
      instructions:
        'Daily consumer-demand (main_street) vs analyst-sentiment (wall_street) scores of US stocks. Each tool mirrors a REST endpoint and draws the same credits from your account.',
    },
  );
  for (const { name, inputSchema, run, ...config } of TOOLS) {
    if (inputSchema) server.registerTool(name, { ...config, inputSchema }, (args, extra) => run(args, contextOf(extra)));
    else server.registerTool(name, config, (extra) => run({}, contextOf(extra)));
  }
  return server;
}
