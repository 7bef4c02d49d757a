import { rmSync } from 'node:fs';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { divergenceEvents, divergenceProjection, type DivergenceEventDoc } from '../../projections/divergence/divergence.projection.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, median, report } from './stats.js';

const TARGET_SECONDS = 30;

async function eventDigest(scan: AsyncIterable<DivergenceEventDoc>): Promise<string> {
  const parts: string[] = [];
  for await (const e of scan) parts.push(JSON.stringify(e));
  return parts.join('\n');
}

/**
 * Time to rebuild the outcome read models (divergence days, events, score moves) from the whole log.
 *
 * The full demo dataset is seeded once. Each run then drops only the divergence collections and
 * the `divergence` checkpoint and runs a fresh ProjectorRunner with just the divergence projection
 * from the start of the log. It reads the daily cross-sections and prices the seed already built
 * (their final, restated values), so the figure is the outcome models' own cost: the whole log is
 * read, every day is ranked and every restatement recomputes from its date forward (converging at
 * once, as the values are already final). Each run checks that it rebuilt exactly the events of
 * the live run.
 */
export async function benchOutcomesRebuild(runs: number, now: string): Promise<void> {
  const dir = tempDir('scores-bench-outcomes-');
  const services = await openServices(loadConfig(testEnv(dir, now)));
  const seconds: number[] = [];
  try {
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    const live = await eventDigest(services.reads.scan(divergenceEvents));
    const events = live ? live.split('\n').length : 0;
    for (let i = 0; i < runs; i++) {
      await services.reads.reset(
        divergenceProjection.collections.map((c) => c.name),
        [divergenceProjection.name],
      );
      const runner = new ProjectorRunner(services.events, services.reads, [divergenceProjection]);
      const t0 = performance.now();
      await runner.start();
      seconds.push((performance.now() - t0) / 1000);
      await runner.stop();
      const rebuilt = await eventDigest(services.reads.scan(divergenceEvents));
      if (rebuilt !== live) throw new Error('outcome rebuild differs from the live run');
      process.stderr.write(`  run ${i + 1}/${runs}: outcome rebuild ${fmt(seconds[i]!)} s (${events.toLocaleString('en-US')} divergence events)\n`);
    }
  } finally {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const m = median(seconds);
  report(`rebuild outcome read models (median of ${runs})`, `${fmt(m)} s`, `< ${TARGET_SECONDS} s`, m < TARGET_SECONDS);
}
