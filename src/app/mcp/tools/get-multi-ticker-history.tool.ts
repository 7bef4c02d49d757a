import { z } from 'zod';
import { run as getMultiTickerHistory } from '../../../../queries/get-multi-ticker-history/get-multi-ticker-history.controller.js';
import { callTwin, describeTool, restArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_multi_ticker_history`, the twin of GET /v1/scores/history: many tickers in one call, and incremental sync. */
export const getMultiTickerHistoryTool = twinTool({
  name: toolNameOf('multi_history'),
  title: 'Score history of many stocks, with incremental sync',
  description: describeTool(
    'multi_history',
    'Daily score history of many stocks in one call, ordered by ticker then date. Incremental sync: pass the previous answer\'s next_since back as since to get only the rows written (new or restated) after that answer, each once; upsert them by ticker and date. At most 200,000 rows per call: a broader query is refused with limit_exceeded and charged nothing, except when following next_since, where has_more true means more rows wait for the next call. With as_known_at, each row is returned as it was published at that instant.',
  ),
  inputSchema: {
    tickers: restArg(
      z.string().describe('Comma-separated symbols, case-insensitive, at most 50, e.g. "AAPL,MSFT". Absent: every ticker your key can see.'),
    ),
    start: restArg(z.string().describe('First date, YYYY-MM-DD; raised silently to your tier\'s history floor.')),
    end: restArg(z.string().describe('Last date, YYYY-MM-DD; lowered to your as-of date.')),
    since: restArg(
      z
        .string()
        .describe(
          'Incremental sync: the next_since of your previous answer (rows written after it, each once). Also accepted: a date YYYY-MM-DD, an ISO 8601 instant or a restated_at value, inclusive (rows written at or after it).',
        ),
    ),
    as_known_at: restArg(
      z
        .string()
        .describe('An instant (ISO 8601 such as 2024-05-01T21:00:00Z, or YYYY-MM-DD for 00:00 UTC): rows as published at that instant.'),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ tickers, start, end, since, as_known_at }, ctx) =>
    callTwin(ctx, 'multi_history', (call) => getMultiTickerHistory(call, tickers, start, end, since, as_known_at)),
});
