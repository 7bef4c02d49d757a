import { run as getTrackRecord, type TrackRecordResponse } from '../../../../queries/get-track-record/get-track-record.query.js';
import { twinTool } from '../rest-twin.js';

/** How many trades the text block lists, newest exit first. */
export const TEXT_TRADES = 20;

/**
 * The text block of a record with more trades than TEXT_TRADES: the aggregates, `as_of` and
 * `citation_url` as they are, the newest trades under `newest_trades` (not `trades`, so that no
 * reader takes it for the whole list) and a note saying where the rest is. `structuredContent`
 * carries the whole record: the result holds it once, not twice (a megabyte and more as JSON with
 * the full history, free), and a model reading the text gets what it can use.
 */
export function trackRecordText(body: object, json: string): string {
  const { trades, ...aggregates } = body as TrackRecordResponse;
  if (trades.length <= TEXT_TRADES) return json;
  return JSON.stringify({
    ...aggregates,
    newest_trades: trades.slice(0, TEXT_TRADES),
    note: `The newest ${TEXT_TRADES} of ${trades.length} closed trades. This result's structuredContent is the whole record, every trade, as GET /v1/track-record answers it; this text is its summary.`,
  });
}

/** `get_track_record`, the twin of GET /v1/track-record. */
export const getTrackRecordTool = twinTool({
  key: 'track_record',
  title: 'Model-portfolio track record',
  description:
    'The public model portfolio\'s closed trades (long each bull divergence event, short each bear one, flag to close) with win rate, mean and median return, average days held, best and worst. The whole record is in structuredContent; the text block summarises it (the aggregates and the newest 20 trades).',
  run: (_args, call) => getTrackRecord(call),
  text: trackRecordText,
});
