/**
 * The nightly export (docs/exports.md, "When bundles are built"): a cron pattern in UTC
 * (SCORES_EXPORTS_SCHEDULE, by default 22:30, after the 22:00 publication), read against the
 * clock port. A check runs soon after start and every minute: when the latest scheduled time has
 * passed and no bundle completed since, a run starts. So a server that was down at that time, or
 * a new store, gets its bundle at start. Several replicas on one data directory take turns
 * through the run lock.
 */
import { Cron } from 'croner';
import { latestBundle } from '../../projections/exports/exports.projection.js';
import { runExport, type ExportDeps, type ExportRunResult } from './export-run.handler.js';

/** A cron pattern in UTC (croner's: 5 fields, or 6-7 with seconds and year); throws with the reason when it is not one or never fires. */
export function parseSchedule(pattern: string): Cron {
  const schedule = new Cron(pattern, { timezone: 'UTC', paused: true });
  if (schedule.nextRun() === null) throw new Error(`the pattern "${pattern}" never fires`);
  return schedule;
}

/** The latest time the schedule names that is not after `now`. */
export function latestSlot(schedule: Cron, now: Date): Date | null {
  return schedule.previousRuns(1, new Date(now.getTime() + 1))[0] ?? null;
}

export interface ExportScheduleOptions extends ExportDeps {
  schedule: Cron;
  /** How often the schedule is checked (default a minute); the first check comes after `firstCheckMs` (default 5 s). */
  intervalMs?: number;
  firstCheckMs?: number;
  /** After a failed run, the wait before the next try (default 15 minutes). */
  retryMs?: number;
  onRun?: (result: ExportRunResult) => void;
  onError?: (err: unknown) => void;
}

export function startExportSchedule(options: ExportScheduleOptions): { stop(): Promise<void> } {
  const { intervalMs = 60_000, firstCheckMs = 5_000, retryMs = 15 * 60_000 } = options;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const abort = new AbortController();
  let notBefore = 0;
  const check = async () => {
    const now = options.clock.now();
    const slot = latestSlot(options.schedule, now);
    if (!slot || performance.now() < notBefore) return;
    const since = (await latestBundle(options.reads))?.started_at;
    if (since !== undefined && since >= slot.toISOString()) return;
    try {
      const result = await runExport(options, { trigger: 'schedule', signal: abort.signal, unlessCompletedSince: slot.toISOString() });
      options.onRun?.(result);
    } catch (err) {
      if (abort.signal.aborted) return;
      notBefore = performance.now() + retryMs;
      throw err;
    }
  };
  const tick = () => {
    if (stopped) return;
    running = running.then(check).catch((err: unknown) => options.onError?.(err));
  };
  const first = setTimeout(tick, firstCheckMs);
  const timer = setInterval(tick, intervalMs);
  first.unref();
  timer.unref();
  return {
    async stop() {
      stopped = true;
      abort.abort();
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
