import { run as screenStocks } from '../../../../queries/get-screener/get-screener.query.js';
import { twinTool } from '../rest-twin.js';

/** `screen_stocks`, the twin of GET /v1/screener. */
export const screenStocksTool = twinTool({
  key: 'screener',
  title: 'Rank stocks by service_score',
  description:
    'The whole universe you can see, ranked by service_score descending, as of your as-of date. Free keys see the top100 universe, 7 days delayed.',
  run: ({ min_score, limit }, call) => screenStocks(call, min_score, limit),
});
