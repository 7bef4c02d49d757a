import { run as getScoreHistory } from '../../../../queries/get-score-history/get-score-history.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_score_history`, the twin of GET /v1/scores/{ticker}/history. */
export const getScoreHistoryTool = twinTool({
  key: 'history',
  title: 'Score history of one stock',
  description:
    'Daily score history of one stock, oldest first. start is raised to your tier\'s history floor and end lowered to your as-of date, silently. With as_known_at, each row is returned as it was published at that instant (no look-ahead from later restatements).',
  run: ({ ticker, start, end, as_known_at }, call) => getScoreHistory(call, ticker!, start, end, as_known_at),
});
