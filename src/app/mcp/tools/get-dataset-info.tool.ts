import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { run as getMeta } from '../../../../queries/get-meta/get-meta.controller.js';
import { callTwin, describeTool, toolNameOf, type ToolContext } from '../rest-twin.js';

/** `get_dataset_info`, the twin of GET /v1/meta. */
export function registerGetDatasetInfo(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    toolNameOf('meta'),
    {
      title: 'Dataset information',
      description: describeTool(
        'meta',
        'What the dataset is, its universe, a definition of every field, the depth of the history with point-in-time restatement statistics, and where the licence and docs are.',
      ),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => callTwin(ctx, 'meta', getMeta),
  );
}
