import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type ListToolsResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { contractOf, toolDocument, type ToolContract } from './contract.js';
import type { TwinTool } from './rest-twin.js';
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
import { getRequestLogTool } from './tools/get-request-log.tool.js';
import { listBulkExportsTool } from './tools/list-bulk-exports.tool.js';
import { listWebhooksTool } from './tools/list-webhooks.tool.js';
import { SERVICE_VERSION } from '../version.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

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
  getRequestLogTool,
  listBulkExportsTool,
  listWebhooksTool,
];

/** A tool with its contract, as the server lists and runs it. */
export interface ToolEntry {
  tool: TwinTool;
  contract: ToolContract;
}

/**
 * Each tool with the contract of its REST twin, read from the OpenAPI document tsoa generated (the
 * same completed document /openapi.json serves): once per process.
 */
export function toolEntries(spec: Record<string, unknown>): ReadonlyMap<string, ToolEntry> {
  const doc = toolDocument(spec);
  return new Map(TOOLS.map((tool) => [tool.name, { tool, contract: contractOf(doc, tool.key, tool.nullable) }]));
}

/** What `tools/list` answers: built once, the tools never change while the process runs. */
function listed(entries: ReadonlyMap<string, ToolEntry>): ListToolsResult {
  return {
    tools: [...entries.values()].map(({ tool, contract }) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: contract.inputSchema,
      outputSchema: contract.outputSchema,
      annotations: tool.annotations,
    })),
  };
}

/**
 * The MCP server of the process: built once, with the tools, and serving every request of every
 * caller (see ./dispatcher.ts). Every tool is the twin of a REST endpoint and runs its query;
 * `call` runs a `tools/call` for the caller of the request it came in (found by the SDK's
 * `extra`). The SDK's low-level server: it answers `initialize`, `ping` and unknown methods, and
 * declares only the `tools` capability, without `listChanged`: the tools of this stateless server
 * never change, and it has no session to notify.
 */
export function createMcpServer(entries: ReadonlyMap<string, ToolEntry>, call: (params: CallToolRequest['params'], extra: Extra) => Promise<CallToolResult>): Server {
  const server = new Server(
    { name: 'scores-service', title: 'Main-Street / Wall-Street scores', version: SERVICE_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'Daily consumer-demand (main_street) vs analyst-sentiment (wall_street) scores of US stocks. Each tool mirrors a REST endpoint, takes its parameters (and no others but dry_run and max_credits) and draws the same credits from your account; its description says what it costs. To bound your spend, pass max_credits (a call that would cost more is refused with cost_exceeds_max and charges nothing) or first call with dry_run: true (the price now, or the refusal the call would get; nothing charged). Every result carries your balance afterwards as _meta.credits_remaining (a number; null when unmetered), and get_usage shows the whole account. A refusal is a tool error whose structuredContent is problem details with a stable code.',
    },
  );
  const tools = listed(entries);
  server.setRequestHandler(ListToolsRequestSchema, () => tools);
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => call(request.params, extra));
  return server;
}
