import { run as getSocialHeat } from '../../../../queries/get-social-heat/get-social-heat.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_social_heat`, the twin of GET /v1/scores/social-heat/{ticker}. */
export const getSocialHeatTool = twinTool({
  key: 'social_heat',
  title: 'Social heat series of one stock',
  description:
    'Daily social heat of one stock, oldest first: each day\'s US web visits as a percentage of the highest of that day and the trailing 365 days, computed live (see formula). start is raised to your tier\'s history floor and end lowered to your as-of date, silently.',
  run: ({ ticker, start, end }, call) => getSocialHeat(call, ticker!, start, end),
});
