import { run as getMeta } from '../../../../queries/get-meta/get-meta.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_dataset_info`, the twin of GET /v1/meta. */
export const getDatasetInfoTool = twinTool({
  key: 'meta',
  title: 'Dataset information',
  description:
    'What the dataset is, its universe, a definition of every field, the depth of the history with point-in-time restatement statistics, and where the licence and docs are.',
  run: (_args, call) => getMeta(call),
});
