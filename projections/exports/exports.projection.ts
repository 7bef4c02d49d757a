/**
 * Export runs and downloads (docs/exports.md): one document per run (what GET /v1/bulk/exports
 * lists is the newest completed one) and one per download (who took which file, how much of it).
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection, type ReadStore } from '../../src/core/read-store.port.js';
import type { ExportDownloaded, ExportFileWritten, ExportRunEvent, ExportStarted } from '../../src/domain/exports/export.events.js';

export type ExportFileDoc = Omit<ExportFileWritten['data'], 'run_id'>;

export interface ExportRunDoc {
  run_id: string;
  /** The run's place among runs (its ExportStarted's revision in the `exports` stream): runs hold a lock, so this is also the order they complete in. */
  seq: number;
  status: 'running' | 'completed' | 'abandoned' | 'deleted';
  trigger: ExportStarted['data']['trigger'];
  started_at: string;
  /** Set when the run completed. */
  completed_at: string | null;
  positions: Record<string, string | null>;
  consistent: boolean;
  files: ExportFileDoc[];
}

export const exportRuns = defineCollection<ExportRunDoc>({
  name: 'export_runs',
  key: (r) => r.run_id,
  fields: ['status', 'seq'],
  // The newest completed bundle; the newest runs.
  indexes: [['status', 'seq'], ['seq']],
});

/** The newest completed bundle (what GET /v1/bulk/exports lists), or null before the first. */
export async function latestBundle(reads: ReadStore): Promise<ExportRunDoc | null> {
  const page = await reads.find(exportRuns, { status: 'completed' }, { sort: [['seq', -1]], limit: 1 });
  return page.items[0] ?? null;
}

export type ExportDownloadDoc = ExportDownloaded['data'];

export const exportDownloads = defineCollection<ExportDownloadDoc>({
  name: 'export_downloads',
  key: (d) => d.request_id,
  fields: ['account_id', 'at'],
  // An account's downloads, newest first; everyone's, by time.
  indexes: [['account_id', 'at'], ['at']],
});

export const exportsProjection: Projection = {
  name: 'exports',
  collections: [exportRuns, exportDownloads],
  eventTypes: ['ExportStarted', 'ExportFileWritten', 'ExportCompleted', 'ExportAbandoned', 'ExportBundleDeleted', 'ExportDownloaded'],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as ExportRunEvent | ExportDownloaded;
    if (event.type === 'ExportDownloaded') {
      ctx.upsert(exportDownloads, event.data);
      return;
    }
    if (event.type === 'ExportStarted') {
      const { run_id, trigger, started_at, positions, consistent } = event.data;
      // Applied again after a crash: the run may have moved on since; keep what is there.
      if ((await ctx.get(exportRuns, run_id)) === null) {
        ctx.upsert(exportRuns, { run_id, seq: raw.revision, status: 'running', trigger, started_at, completed_at: null, positions, consistent, files: [] });
      }
      return;
    }
    const run = await ctx.get(exportRuns, event.data.run_id);
    if (!run) return;
    switch (event.type) {
      case 'ExportFileWritten': {
        const { run_id: _run, ...file } = event.data;
        ctx.upsert(exportRuns, { ...run, files: [...run.files.filter((f) => f.name !== file.name), file] });
        return;
      }
      case 'ExportCompleted':
        ctx.upsert(exportRuns, { ...run, status: 'completed', completed_at: event.data.completed_at });
        return;
      case 'ExportAbandoned':
        ctx.upsert(exportRuns, { ...run, status: 'abandoned' });
        return;
      case 'ExportBundleDeleted':
        ctx.upsert(exportRuns, { ...run, status: 'deleted' });
        return;
    }
  },
};
