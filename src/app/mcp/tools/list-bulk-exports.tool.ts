import { run as listBulkExports } from '../../../../queries/get-bulk-exports/get-bulk-exports.query.js';
import { twinTool } from '../rest-twin.js';

/** `list_bulk_exports`, the twin of GET /v1/bulk/exports. */
export const listBulkExportsTool = twinTool({
  key: 'bulk_exports',
  title: 'Bulk export files',
  description:
    'The latest Backtest Pack, rebuilt nightly: the full score history, every divergence event and every published score version as gzipped CSV, each file with its row count, SHA-256 and a url to download over HTTPS with the same X-API-Key (downloads are free too).',
  run: (_args, call) => listBulkExports(call),
});
