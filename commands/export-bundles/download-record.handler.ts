import type { Clock } from '../../src/core/clock.js';
import { handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { exportDownloadDecider } from '../../src/domain/exports/export-download.decider.js';
import type { ExportDownloaded } from '../../src/domain/exports/export.events.js';

/** Records what a bundle download sent (read by no decision: no stream is read first). */
export async function recordDownload(deps: { events: EventStore; clock: Clock }, data: ExportDownloaded['data']): Promise<void> {
  await handleCommand(deps.events, exportDownloadDecider, [], { type: 'RecordDownload', data }, deps.clock);
}
