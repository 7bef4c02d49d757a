import { run as getMultiTickerHistory } from '../../../../queries/get-multi-ticker-history/get-multi-ticker-history.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_multi_ticker_history`, the twin of GET /v1/scores/history: many tickers in one call, and incremental sync. */
export const getMultiTickerHistoryTool = twinTool({
  key: 'multi_history',
  title: 'Score history of many stocks, with incremental sync',
  description:
    'Daily score history of many stocks in one call, ordered by ticker then date. Incremental sync: pass the previous answer\'s next_since back as since to get only the rows written (new or restated) after that answer, each once; upsert them by ticker and date. At most 200,000 rows per call: a broader query is refused with limit_exceeded and charged nothing, except when following next_since, where has_more true means more rows wait for the next call. With as_known_at, each row is returned as it was published at that instant.',
  run: ({ tickers, start, end, since, as_known_at }, call) => getMultiTickerHistory(call, tickers, start, end, since, as_known_at),
});
