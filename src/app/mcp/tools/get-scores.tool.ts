import { run as getScore } from '../../../../queries/get-score/get-score.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_scores`, the twin of GET /v1/scores/{ticker}. */
export const getScoresTool = twinTool({
  key: 'scores',
  title: 'Scores of one stock',
  description:
    'The Main-Street / Wall-Street scores of one stock as of your as-of date (the latest published day; free keys trail 7 days).',
  run: ({ ticker }, call) => getScore(call, ticker!),
});
