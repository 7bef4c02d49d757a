import { rmSync } from 'node:fs';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, median, report } from './stats.js';

/**
 * Seed time of the full demo dataset (events written + read models built), replay throughput
 * (score rows per second when every read model is rebuilt from the log), and the time to generate
 * the demo history in memory alone (no store).
 */
export async function benchSeedAndReplay(runs: number, now: string): Promise<void> {
  const seedSeconds: number[] = [];
  const replayRowsPerSecond: number[] = [];
  let rows = 0;
  for (let i = 0; i < runs; i++) {
    const dir = tempDir('scores-bench-');
    const services = await openServices(loadConfig(testEnv(dir, now)));
    try {
      const t0 = performance.now();
      await seedIfEmpty(services, { progress: false });
      await catchUpReadModels(services, { progress: false });
      seedSeconds.push((performance.now() - t0) / 1000);
      rows = 0;
      for await (const day of services.reads.scan(dailyScores)) rows += day.tickers.length;
      const t1 = performance.now();
      await services.runner.replay();
      const replaySeconds = (performance.now() - t1) / 1000;
      replayRowsPerSecond.push(rows / replaySeconds);
      process.stderr.write(
        `  run ${i + 1}/${runs}: seed ${fmt(seedSeconds[i]!)} s, replay ${fmt(replaySeconds)} s (${rows.toLocaleString('en-US')} score rows)\n`,
      );
    } finally {
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const generated: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    new DemoDataset().appendsBetween(null, new Date('2026-11-22T23:59:59Z'));
    generated.push((performance.now() - t0) / 1000);
  }
  const generation = median(generated);
  report(`demo history 2019-01-02..2026-11-22 generated in memory (median of ${runs})`, `${fmt(generation)} s`, '< 10 s', generation < 10);
  const seed = median(seedSeconds);
  const replay = median(replayRowsPerSecond);
  report(`seed full demo dataset (median of ${runs})`, `${fmt(seed)} s`, '< 60 s', seed < 60);
  report(`replay throughput (median of ${runs})`, `${fmt(replay, 0)} score rows/s`, '>= 200,000/s', replay >= 200_000);
}
