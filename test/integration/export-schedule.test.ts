import { expect } from 'chai';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExportRunResult } from '../../commands/export-bundles/export-run.handler.js';
import { latestSlot, parseSchedule, startExportSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { fixedClock } from '../../src/core/clock.js';
import type { ExportFiles } from '../../src/core/export-files.port.js';
import { EXPORTS_STREAM, type ExportRunEvent } from '../../src/domain/exports/export.events.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NIGHTLY = '30 22 * * *';
// The demo starts on 2019-01-02: two months of it seed in a few seconds.
const NOW = '2019-03-01T23:00:00.000Z';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('The nightly export schedule', function () {
  this.timeout(120_000);

  describe('When a pattern is read', () => {
    it('refuses what is not a cron pattern, or names values out of range', () => {
      for (const pattern of ['', 'not a cron', '* * *', '30 22 * *', '61 22 * * *', '30 24 * * *', '30 22 32 * *', '30 22 * 13 *', '30 22 * * 8', 'nightly at 22:30']) {
        expect(() => parseSchedule(pattern), JSON.stringify(pattern)).to.throw();
      }
    });

    it('accepts five fields, and six with seconds first', () => {
      for (const pattern of [NIGHTLY, '0 */6 * * *', '0 30 22 * * *', '30 22 * * 1-5']) expect(() => parseSchedule(pattern), pattern).not.to.throw();
    });
  });

  describe('When the latest scheduled time is asked', () => {
    const nightly = parseSchedule(NIGHTLY);
    const slot = (now: string) => latestSlot(nightly, new Date(now))?.toISOString();

    it("is that day's time from the very moment it is reached", () => {
      expect(slot('2026-11-24T22:30:00.000Z')).to.equal('2026-11-24T22:30:00.000Z');
      expect(slot('2026-11-24T22:30:00.001Z')).to.equal('2026-11-24T22:30:00.000Z');
      expect(slot('2026-11-24T23:59:59.999Z')).to.equal('2026-11-24T22:30:00.000Z');
    });

    it("is the day before's until then", () => {
      expect(slot('2026-11-24T22:29:00.000Z')).to.equal('2026-11-23T22:30:00.000Z');
      expect(slot('2026-11-24T22:29:59.999Z')).to.equal('2026-11-23T22:30:00.000Z');
      expect(slot('2026-11-24T00:00:00.000Z')).to.equal('2026-11-23T22:30:00.000Z');
      expect(slot('2026-01-01T00:00:00.000Z')).to.equal('2025-12-31T22:30:00.000Z');
    });

    it('reads the pattern in UTC', () => {
      expect(latestSlot(parseSchedule('0 0 * * *'), new Date('2026-11-24T00:00:00.000Z'))?.toISOString()).to.equal('2026-11-24T00:00:00.000Z');
      expect(latestSlot(parseSchedule('30 22 * * 1'), new Date('2026-11-24T12:00:00.000Z'))?.toISOString()).to.equal('2026-11-23T22:30:00.000Z');
    });
  });

  describe('When the schedule runs beside a store', () => {
    let dir: string;
    let services: Services;
    const clock = fixedClock(NOW);
    let schedule: { stop(): Promise<void> } | null = null;
    const runs: ExportRunResult[] = [];
    const errors: unknown[] = [];
    /** Called when a run creates a file (the ExportFiles port, observed). */
    let onCreate: (() => void) | null = null;

    const completed = () => runs.filter((r) => r.status === 'completed');
    const started = async () =>
      ((await services.events.readStream(EXPORTS_STREAM)) as unknown as ExportRunEvent[]).filter((e) => e.type === 'ExportStarted').map((e) => e.data.run_id);
    const start = () => {
      const real = services.exportFiles;
      const files: ExportFiles = {
        lock: () => real.lock(),
        create: async (runId, name) => {
          const sink = await real.create(runId, name);
          onCreate?.();
          return sink;
        },
        size: (runId, name) => real.size(runId, name),
        read: (runId, name, range) => real.read(runId, name, range),
        runs: () => real.runs(),
        remove: (runId) => real.remove(runId),
        close: () => real.close(),
      };
      schedule = startExportSchedule({
        events: services.events,
        reads: services.reads,
        files,
        clock,
        ids: services.ids,
        schedule: parseSchedule(NIGHTLY),
        intervalMs: 25,
        firstCheckMs: 10,
        onRun: (r) => runs.push(r),
        onError: (err) => errors.push(err),
      });
      return schedule;
    };

    before(async () => {
      dir = tempDir('scores-export-schedule-');
      services = await openServices(loadConfig(testEnv(dir, NOW)), { clock });
      await seedIfEmpty(services, { progress: false });
      await catchUpReadModels(services, { progress: false });
    });
    afterEach(async () => {
      onCreate = null;
      await schedule?.stop();
      schedule = null;
    });
    after(async () => {
      await services?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('runs once at start when there is no bundle yet, and not again on later checks', async () => {
      start();
      await until(() => completed().length > 0 || errors.length > 0, 30_000);
      expect(errors).to.deep.equal([]);
      // Many more checks (every 25 ms) find the bundle of today's slot.
      await pause(1_000);
      expect(errors).to.deep.equal([]);
      expect(await started()).to.have.length(1);
      expect(completed()).to.have.length(1);
      expect(runs.map((r) => r.status)).not.to.include('busy');
    });

    it('runs again once the clock passes the next scheduled time, and only then', async () => {
      start();
      clock.set('2019-03-02T22:29:59.000Z');
      await pause(500);
      expect(await started()).to.have.length(1);

      clock.set('2019-03-02T22:30:00.000Z');
      await until(() => completed().length === 2 || errors.length > 0, 30_000);
      expect(errors).to.deep.equal([]);
      await pause(1_000);
      expect(await started()).to.have.length(2);
      expect(completed()).to.have.length(2);
    });

    it('stops: a run in progress is aborted, and stop() resolves once it has given up', async () => {
      const before = (await started()).length;
      let stopping: Promise<void> | null = null;
      const writing = new Promise<void>((resolve) => (onCreate = resolve));
      const s = start();
      clock.set('2019-03-03T22:45:00.000Z');
      await writing;
      stopping = s.stop();
      await stopping;

      const ids = await started();
      expect(ids).to.have.length(before + 1);
      const events = (await services.events.readStream(EXPORTS_STREAM)) as unknown as ExportRunEvent[];
      expect(events.filter((e) => e.data.run_id === ids.at(-1)).map((e) => e.type)).to.deep.equal(['ExportStarted']);
      expect(completed()).to.have.length(2);
      expect(errors).to.deep.equal([]);
      const partials = readdirSync(join(dir, 'exports'), { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.partial'));
      expect(partials).to.deep.equal([]);
      // The lock is free again.
      const lock = await services.exportFiles.lock();
      expect(lock).not.to.equal(null);
      await lock!.release();
      // No check runs after stop().
      await pause(300);
      expect(await started()).to.have.length(before + 1);
      expect(existsSync(join(dir, 'exports', ids.at(-1)!, '.scores_history.csv.gz.partial'))).to.equal(false);
    });
  });
});
