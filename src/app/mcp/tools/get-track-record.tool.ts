import { run as getTrackRecord } from '../../../../queries/get-track-record/get-track-record.controller.js';
import { twinTool } from '../rest-twin.js';

/** `get_track_record`, the twin of GET /v1/track-record. */
export const getTrackRecordTool = twinTool({
  key: 'track_record',
  title: 'Model-portfolio track record',
  description:
    'The public model portfolio\'s closed trades (long each bull divergence event, short each bear one, flag to close) with win rate, mean and median return, average days held, best and worst.',
  run: (_args, call) => getTrackRecord(call),
});
