import { run as getDivergence } from '../../../../queries/get-divergence/get-divergence.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_divergences`, the twin of GET /v1/divergence. */
export const getDivergencesTool = twinTool({
  key: 'divergence',
  title: 'Widest divergence gaps',
  description:
    'The widest gaps between main_street and wall_street on your as-of date, ranked by |gap|, with each gap\'s percentile and days at an extreme. Builder keys and higher also get why_now research.',
  nullable: ['direction'],
  run: ({ direction, limit }, call) => getDivergence(call, direction, limit),
});
