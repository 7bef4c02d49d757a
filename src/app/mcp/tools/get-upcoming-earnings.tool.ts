import { run as getEarnings } from '../../../../queries/get-earnings/get-earnings.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_upcoming_earnings`, the twin of GET /v1/earnings. */
export const getUpcomingEarningsTool = twinTool({
  key: 'earnings',
  title: 'Upcoming earnings reporters',
  description:
    'Stocks reporting earnings in the next `days` days (today included), with their current scores going in.',
  run: ({ days }, call) => getEarnings(call, days),
});
