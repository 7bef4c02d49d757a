import { run as getMeta } from '../../../../queries/get-meta/get-meta.controller.js';
import { callTwin, describeTool, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_dataset_info`, the twin of GET /v1/meta. */
export const getDatasetInfoTool = twinTool({
  name: toolNameOf('meta'),
  title: 'Dataset information',
  description: describeTool(
    'meta',
    'What the dataset is, its universe, a definition of every field, the depth of the history with point-in-time restatement statistics, and where the licence and docs are.',
  ),
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_args, ctx) => callTwin(ctx, 'meta', getMeta),
});
