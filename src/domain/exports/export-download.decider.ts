/**
 * A bundle download recorded on the account's `export-downloads-<account_id>` stream: what was
 * sent, whole or in part. Every download is a fact of its own, decided on no state, so the
 * handler reads nothing and appends at any revision (commands/export-bundles/download-record.handler.ts).
 */
import type { Decider } from '../../core/decider.js';
import { exportDownloadsStream, type ExportDownloaded } from './export.events.js';

export interface RecordDownload {
  type: 'RecordDownload';
  data: ExportDownloaded['data'];
}

export const exportDownloadDecider: Decider<null, RecordDownload, ExportDownloaded> = {
  initialState: () => null,
  evolve: (s) => s,
  decide: (_s, { data }) => ({ events: [], writes: [{ streamId: exportDownloadsStream(data.account_id), events: [{ type: 'ExportDownloaded', data }] }] }),
};
