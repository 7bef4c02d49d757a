import { run as listBulkExports } from '../../../../queries/get-bulk-exports/get-bulk-exports.controller.js';
import { callTwin, describeTool, toolNameOf, twinTool } from '../rest-twin.js';

/** `list_bulk_exports`, the twin of GET /v1/bulk/exports. */
export const listBulkExportsTool = twinTool({
  name: toolNameOf('bulk_exports'),
  title: 'Bulk export files',
  description: describeTool(
    'bulk_exports',
    'The latest Backtest Pack, rebuilt nightly: the full score history, every divergence event and every published score version as gzipped CSV, each file with its row count, SHA-256 and a url to download over HTTPS with the same X-API-Key (downloads are free too).',
  ),
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_args, ctx) => callTwin(ctx, 'bulk_exports', listBulkExports),
});
