/**
 * Export runs, decided on the `exports` stream. The caller holds the run lock (ExportFiles.lock)
 * for the whole run, so a run found still `running` when another starts belongs to a process that
 * died: it is abandoned.
 */
import type { NewEvent } from '../../src/core/event-store.port.js';
import type { Stream } from '../../src/core/command-handler.js';
import { BUNDLES_KEPT, EXPORT_NAMES, type ExportName } from '../../src/domain/exports/export-bundle.js';
import { EXPORTS_STREAM, type ExportFileWritten, type ExportRunEvent, type ExportStarted } from '../../src/domain/exports/export.events.js';

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

export const exportsStream: Stream<ExportsState, ExportRunEvent> = {
  streamId: EXPORTS_STREAM,
  initialState: () => ({ runs: [] }),
  evolve(state, event) {
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
  },
};

const event = <E extends ExportRunEvent>(type: E['type'], data: E['data']): NewEvent => ({ type, data });

/** Abandons whatever is still running (its process is gone: the caller holds the lock) and starts a run. */
export function startRun(state: ExportsState, data: ExportStarted['data']): NewEvent[] {
  if (state.runs.some((r) => r.run_id === data.run_id)) throw new Error(`export run ${data.run_id} exists already`);
  const abandoned = state.runs.filter((r) => r.status === 'running').map((r) => event('ExportAbandoned', { run_id: r.run_id, at: data.started_at }));
  return [...abandoned, event('ExportStarted', data)];
}

function running(state: ExportsState, runId: string): RunState {
  const run = state.runs.find((r) => r.run_id === runId);
  // Only a run that outlived its lock could see this (another process abandoned it).
  if (run?.status !== 'running') throw new Error(`export run ${runId} is ${run ? run.status : 'unknown'}, not running`);
  return run;
}

/** A file of a running run is in place (recorded once). */
export function recordFile(state: ExportsState, data: ExportFileWritten['data']): NewEvent[] {
  const run = running(state, data.run_id);
  return run.files.includes(data.name) ? [] : [event('ExportFileWritten', data)];
}

/** Completes a run once every file is written, and deletes the completed bundles beyond the newest BUNDLES_KEPT. */
export function completeRun(state: ExportsState, runId: string, at: string): NewEvent[] {
  const run = running(state, runId);
  const missing = EXPORT_NAMES.filter((n) => !run.files.includes(n));
  if (missing.length) throw new Error(`export run ${runId} cannot complete without ${missing.join(', ')}`);
  const completedBefore = state.runs.filter((r) => r.status === 'completed').reverse();
  const beyond = completedBefore.slice(BUNDLES_KEPT - 1);
  return [event('ExportCompleted', { run_id: runId, completed_at: at }), ...beyond.map((r) => event('ExportBundleDeleted', { run_id: r.run_id, at }))];
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
