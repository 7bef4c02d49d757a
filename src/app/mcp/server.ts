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
import { getMultiTickerHistoryTool } from './tools/get-multi-ticker-history.tool.js';
import { getSocialHeatTool } from './tools/get-social-heat.tool.js';
import { getSignalsTool } from './tools/get-signals.tool.js';
import { listThemesTool } from './tools/list-themes.tool.js';
import { getThemeTool } from './tools/get-theme.tool.js';
import { getCoverageTool } from './tools/get-coverage.tool.js';
import { getOpenDivergencesTool } from './tools/get-open-divergences.tool.js';
import { getUsageTool } from './tools/get-usage.tool.js';
import { getUsageLedgerTool } from './tools/get-usage-ledger.tool.js';
import { listBulkExportsTool } from './tools/list-bulk-exports.tool.js';
import { listWebhooksTool } from './tools/list-webhooks.tool.js';
import { SERVICE_VERSION } from '../version.js';

/**
 * The tools, each the twin of a REST read (module constants: built once per process): the spec's
 * eight, then every other read of the API. The MCP column of the rate card names them.
 */
export const TOOLS: readonly TwinTool[] = [
  getScoresTool,
  getScoreHistoryTool,
  screenStocksTool,
  getDivergencesTool,
  getUpcomingEarningsTool,
  getDivergenceEventsTool,
  getTrackRecordTool,
  getDatasetInfoTool,
  getMultiTickerHistoryTool,
  getSocialHeatTool,
  getSignalsTool,
  listThemesTool,
  getThemeTool,
  getCoverageTool,
  getOpenDivergencesTool,
  getUsageTool,
  getUsageLedgerTool,
  listBulkExportsTool,
  listWebhooksTool,
];

/**
 * The MCP server of the process: built once, with the tools, and serving every request of every
 * caller (see ./dispatcher.ts). Every tool is the twin of a REST endpoint and runs its query;
 * `contextOf` gives a tool call the caller and the HTTP response of the request it came in
 * (`creditsRemaining` sets that response's `X-Credits-Remaining`).
 */
export function createMcpServer(contextOf: ContextOf): McpServer {
  const server = new McpServer(
    { name: 'scores-service', title: 'Main-Street / Wall-Street scores', version: SERVICE_VERSION },
    {
      instructions:
        'Daily consumer-demand (main_street) vs analyst-sentiment (wall_street) scores of US stocks. Each tool mirrors a REST endpoint and draws the same credits from your account; its description says what it costs. Every result carries your balance afterwards as _meta.credits_remaining (a number; null when unmetered), and get_usage shows the whole account.',
    },
  );
  for (const { name, inputSchema, run, ...config } of TOOLS) {
    if (inputSchema) server.registerTool(name, { ...config, inputSchema }, (args, extra) => run(args, contextOf(extra)));
    else server.registerTool(name, config, (extra) => run({}, contextOf(extra)));
  }
  return server;
}
