/**
 * Export runs, decided on the `exports` stream. The caller holds the run lock (ExportFiles.lock)
 * for the whole run, so a run found still `running` when another starts belongs to a process that
 * died: it is abandoned. A refusal here is a broken invariant (a run that outlived its lock), not
 * a caller's mistake: it throws a plain Error.
 */
import type { Decider } from '../../core/decider.js';
import { BUNDLES_KEPT, EXPORT_NAMES } from './export-bundle.js';
import type { ExportFileWritten, ExportRunEvent, ExportStarted } from './export.events.js';
import { completedSince, evolveExports, initialExportsState, type ExportsState, type RunState } from './export-run.state.js';

export type ExportRunCommand =
  /** Abandons whatever is still running (its process is gone: the caller holds the lock) and starts a run. */
  | { type: 'StartRun'; data: ExportStarted['data']; /** Start nothing when a run completed that started at or after this instant. */ unless_completed_since?: string }
  /** A file of a running run is in place (recorded once). */
  | { type: 'RecordFile'; data: ExportFileWritten['data'] }
  /** Completes a run once every file is written, and deletes the completed bundles beyond the newest BUNDLES_KEPT. */
  | { type: 'CompleteRun'; run_id: string };

function startRun(state: ExportsState, data: ExportStarted['data']): ExportRunEvent[] {
  if (state.runs.some((r) => r.run_id === data.run_id)) throw new Error(`export run ${data.run_id} exists already`);
  const abandoned = state.runs
    .filter((r) => r.status === 'running')
    .map((r): ExportRunEvent => ({ type: 'ExportAbandoned', data: { run_id: r.run_id, at: data.started_at } }));
  return [...abandoned, { type: 'ExportStarted', data }];
}

function running(state: ExportsState, runId: string): RunState {
  const run = state.runs.find((r) => r.run_id === runId);
  // Only a run that outlived its lock could see this (another process abandoned it).
  if (run?.status !== 'running') throw new Error(`export run ${runId} is ${run ? run.status : 'unknown'}, not running`);
  return run;
}

function recordFile(state: ExportsState, data: ExportFileWritten['data']): ExportRunEvent[] {
  const run = running(state, data.run_id);
  return run.files.includes(data.name) ? [] : [{ type: 'ExportFileWritten', data }];
}

function completeRun(state: ExportsState, runId: string, at: string): ExportRunEvent[] {
  const run = running(state, runId);
  const missing = EXPORT_NAMES.filter((n) => !run.files.includes(n));
  if (missing.length) throw new Error(`export run ${runId} cannot complete without ${missing.join(', ')}`);
  const completedBefore = state.runs.filter((r) => r.status === 'completed').reverse();
  const beyond = completedBefore.slice(BUNDLES_KEPT - 1);
  return [
    { type: 'ExportCompleted', data: { run_id: runId, completed_at: at } },
    ...beyond.map((r): ExportRunEvent => ({ type: 'ExportBundleDeleted', data: { run_id: r.run_id, at } })),
  ];
}

/** `now` dates a completion and its deletions; a run's start carries its own `started_at`. */
function decide(state: ExportsState, command: ExportRunCommand, now: Date): ExportRunEvent[] {
  switch (command.type) {
    case 'StartRun':
      if (command.unless_completed_since !== undefined && completedSince(state, command.unless_completed_since)) return [];
      return startRun(state, command.data);
    case 'RecordFile':
      return recordFile(state, command.data);
    case 'CompleteRun':
      return completeRun(state, command.run_id, now.toISOString());
    default: {
      const _exhaustive: never = command;
      return _exhaustive;
    }
  }
}

export const exportRunDecider = { initialState: initialExportsState, evolve: evolveExports, decide } satisfies Decider<ExportsState, ExportRunCommand, ExportRunEvent>;
