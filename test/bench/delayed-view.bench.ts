import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { latestScores, type LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowOnOrBefore } from '../../projections/score-history/score-history.projection.js';
import { scoreOnOrBefore } from '../../queries/shared/score-as-of.js';
import { visibilityFor } from '../../queries/shared/visibility.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { entitlementsOf } from '../../src/domain/plans.js';
import { inEnginesSandbox, unsetEngines } from '../support/engines-sandbox.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median } from './stats.js';

/** The tickers read: the free universe's largest, each scored after the free as-of date. */
const TICKERS = ['AAPL', 'MSFT', 'AMZN', 'JPM', 'XOM'];

/** Median milliseconds of one delayed-view read, as it read until issue 41 and as it reads now. */
export interface DelayedViewTimes {
  before: number;
  after: number;
}

/**
 * The free tier's delayed view of GET /v1/scores/{ticker}, the read that follows the ticker's
 * latest row: the score as of the free as-of date. Timed on the queries' read store, as it read
 * until issue 41 (a range, a sort and a limit on the score history) and by bucket id, `runs`
 * rounds over a few tickers after one round of warm-up; figures only (the machine is shared).
 */
export async function timeDelayedView(services: Services, runs = 3): Promise<DelayedViewTimes> {
  const reads = services.queries.reads;
  const asOf = (await visibilityFor(reads, entitlementsOf('free', false), services.clock.now())).asOf;
  const latest = await Promise.all(TICKERS.map((t) => reads.get(latestScores, t)));
  const delayed = asOf === null ? [] : latest.filter((l): l is LatestScore => l !== null && l.date > asOf);
  if (asOf === null || delayed.length < TICKERS.length) throw new Error(`the demo at ${services.clock.now().toISOString()} has no delayed view for ${TICKERS.join(', ')}`);
  const time = async (read: (latest: LatestScore) => Promise<unknown>): Promise<number> => {
    for (const l of delayed) await read(l);
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      for (const l of delayed) {
        const t0 = performance.now();
        await read(l);
        ms.push(performance.now() - t0);
      }
    }
    return median(ms);
  };
  return {
    before: await time((l) => rowOnOrBefore(reads, l.ticker, asOf)),
    after: await time((l) => scoreOnOrBefore(reads, l, asOf)),
  };
}

/** A service on `env` with the demo seeded up to `now` and its read models built, for `run`. */
async function seeded<T>(now: string, env: Record<string, string>, run: (services: Services) => Promise<T>): Promise<T> {
  const dir = tempDir('scores-bench-delayed-');
  const services = await openServices(loadConfig(testEnv(dir, now, env)));
  try {
    const t0 = performance.now();
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    process.stderr.write(`  seeded up to ${now} in ${fmt((performance.now() - t0) / 1000)} s (read models: ${services.config.readStore})\n`);
    return await run(services);
  } finally {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The delayed view with the read models embedded, on PostgreSQL and on the MongoDB-wire server
 * (FerretDB under `npm run engines`; the log on PostgreSQL for both), each seeded with the demo up
 * to `now`.
 */
export async function benchDelayedView(runs: number, now: string): Promise<void> {
  const onEngines = (readStore: 'postgres' | 'mongodb') => () =>
    inEnginesSandbox('delayed', now, { readStore }, (sandbox) => seeded(now, sandbox.vars, (s) => timeDelayedView(s, runs)));
  const stores: [string, readonly string[], () => Promise<DelayedViewTimes>][] = [
    ['embedded', [], () => seeded(now, {}, (s) => timeDelayedView(s, runs))],
    ['PostgreSQL', ['POSTGRES_URL'], onEngines('postgres')],
    ['FerretDB', ['POSTGRES_URL', 'MONGODB_URI'], onEngines('mongodb')],
  ];
  for (const [name, needs, measure] of stores) {
    const unset = unsetEngines(needs);
    if (unset.length > 0) {
      process.stdout.write(`SKIP  free delayed view, ${name}: ${unset.join(', ')} not set (npm run engines starts the engines and prints them)\n`);
      continue;
    }
    const t = await measure();
    info(`free delayed view, ${name}`, `${fmt(t.after)} ms by bucket id`, `(${fmt(t.before)} ms by month range; median of ${runs * TICKERS.length})`);
  }
}

// `npx tsx test/bench/delayed-view.bench.ts` (BENCH_RUNS; SCORES_NOW, the end of March 2019 unless set).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchDelayedView(Number(process.env['BENCH_RUNS'] ?? 3), process.env['SCORES_NOW'] ?? '2019-03-29T12:00:00Z');
}
