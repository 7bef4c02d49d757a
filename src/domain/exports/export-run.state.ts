/**
 * The export runs on the `exports` stream, oldest first, and how each event changes them; what the
 * export handler reads off them (the bundles kept, a run completed since an instant). The
 * decisions are src/domain/exports/export-run.decider.ts.
 */
import type { ExportName } from './export-bundle.js';
import type { ExportRunEvent } from './export.events.js';

export type RunStatus = 'running' | 'completed' | 'abandoned' | 'deleted';

export interface RunState {
  run_id: string;
  status: RunStatus;
  started_at: string;
  files: ExportName[];
}

/** The runs, oldest first. */
export interface ExportsState {
  runs: RunState[];
}

export const initialExportsState = (): ExportsState => ({ runs: [] });

export function evolveExports(state: ExportsState, event: ExportRunEvent): ExportsState {
  if (event.type === 'ExportStarted') {
    return { runs: [...state.runs, { run_id: event.data.run_id, status: 'running', started_at: event.data.started_at, files: [] }] };
  }
  const change = (f: (r: RunState) => RunState) => ({ runs: state.runs.map((r) => (r.run_id === event.data.run_id ? f(r) : r)) });
  switch (event.type) {
    case 'ExportFileWritten':
      return change((r) => ({ ...r, files: [...r.files, event.data.name] }));
    case 'ExportCompleted':
      return change((r) => ({ ...r, status: 'completed' }));
    case 'ExportAbandoned':
      return change((r) => ({ ...r, status: 'abandoned' }));
    case 'ExportBundleDeleted':
      return change((r) => ({ ...r, status: 'deleted' }));
    default:
      return state;
  }
}


/** The newest completed run that started at or after `instant` (ISO), if any. */
export function completedSince(state: ExportsState, instant: string): string | undefined {
  return state.runs.findLast((r) => r.status === 'completed' && r.started_at >= instant)?.run_id;
}

/** The completed bundles that are kept, newest first. */
export function keptBundles(state: ExportsState): string[] {
  return state.runs
    .filter((r) => r.status === 'completed')
    .map((r) => r.run_id)
    .reverse();
}
