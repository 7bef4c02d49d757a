import { rmSync } from 'node:fs';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { runCli } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { inEnginesSandbox } from '../support/engines-sandbox.js';
import { timeDelayedView, type DelayedViewTimes } from './delayed-view.bench.js';
import { load, start } from './http.bench.js';
import { fmt, info, median } from './stats.js';

const ENGINES = ['POSTGRES_URL', 'MONGODB_URI', 'KAFKA_BROKERS'] as const;
/**
 * The demo up to the end of March 2019 (about 60 trading days, 36,000 score rows): the read models
 * on FerretDB take minutes for the whole history, and both sides of each row use this clock.
 */
const NOW = '2019-03-29T12:00:00Z';

/**
 * The service's environment on the engines (log on PostgreSQL, read models on FerretDB, bus on
 * Kafka) in a database, a read-model database and a topic prefix of its own; dropped afterwards.
 */
const withEngines = <T>(run: (env: Record<string, string>) => Promise<T>): Promise<T> => inEnginesSandbox('bench', NOW, { kafka: true }, (sandbox) => run(sandbox.vars));

/**
 * Seed (events written, read models built) and a rebuild of every read model, as score rows per
 * second; `between` runs on the seeded services before the rebuild (the engines bench times the
 * free delayed view there). Shared with scale-out.bench.ts.
 */
export async function seedAndReplay(env: Record<string, string>, now = NOW, between?: (services: Services) => Promise<void>): Promise<{ seed: number; replay: number; rows: number }> {
  const dir = tempDir('scores-bench-seed-');
  const services = await openServices(loadConfig(testEnv(dir, now, env)));
  try {
    const t0 = performance.now();
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    const seedSeconds = (performance.now() - t0) / 1000;
    await between?.(services);
    let rows = 0;
    for await (const day of services.reads.scan(dailyScores)) rows += day.tickers.length;
    const t1 = performance.now();
    await services.runner.replay();
    return { seed: rows / seedSeconds, replay: rows / ((performance.now() - t1) / 1000), rows };
  } finally {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** seedAndReplay with the free delayed view's read timed between the two (delayed-view.bench.ts). */
async function seedDelayedReplay(env: Record<string, string>): Promise<{ seed: number; replay: number; rows: number; delayed: DelayedViewTimes }> {
  let delayed: DelayedViewTimes | undefined;
  const rates = await seedAndReplay(env, NOW, async (services) => void (delayed = await timeDelayedView(services)));
  return { ...rates, delayed: delayed! };
}

/** A seeded `scores serve` process (dist) on `env`, the quant demo account's rate set above any load. */
async function meteredServer(env: Record<string, string>): Promise<{ url: string; key: Record<string, string>; stop: () => Promise<void> }> {
  const dir = tempDir('scores-bench-engines-http-');
  const serverEnv = testEnv(dir, NOW, { ...env, PUBLIC_BASE_URL: 'http://localhost' });
  const server = await start(['dist/src/app/main.js'], serverEnv, /listening on http:\/\/localhost:(\d+)/);
  const limit = await runCli(['rate-limit', 'set', '--account', 'demo-quant', '--per-second', '1000000'], serverEnv);
  if (limit.code !== 0) throw new Error(limit.stderr);
  // The server sees the operator's change once its read models hold it.
  await new Promise((r) => setTimeout(r, 3000));
  return {
    url: `http://127.0.0.1:${server.port}/v1/scores/AAPL`,
    key: { 'X-API-Key': demoKey(dir, 'quant') },
    stop: async () => {
      const exited = new Promise((r) => server.child.once('exit', r));
      server.child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The whole service on the engines `npm run engines` starts, beside the embedded default in the
 * same run: seed and replay throughput, and metered `GET /v1/scores/AAPL` (autocannon, 50
 * connections). Figures only (INFO): the engines share this machine with the service.
 */
export async function benchEngines(runs: number, seconds = 8): Promise<void> {
  const unset = ENGINES.filter((name) => !process.env[name]);
  if (unset.length > 0) {
    process.stdout.write(`SKIP  the service on the engines: ${unset.join(', ')} not set (npm run engines starts them and prints them)\n`);
    return;
  }
  const embedded: Awaited<ReturnType<typeof seedDelayedReplay>>[] = [];
  const engines: typeof embedded = [];
  for (let i = 0; i < runs; i++) {
    embedded.push(await seedDelayedReplay({}));
    engines.push(await withEngines((env) => seedDelayedReplay(env)));
    process.stderr.write(
      `  run ${i + 1}/${runs}: seed ${fmt(embedded[i]!.seed, 0)} / ${fmt(engines[i]!.seed, 0)}, replay ${fmt(embedded[i]!.replay, 0)} / ${fmt(engines[i]!.replay, 0)} score rows/s (embedded / engines)\n`,
    );
  }
  const rows = embedded[0]!.rows.toLocaleString('en-US');
  for (const [name, r] of [['embedded', embedded], ['engines', engines]] as const) {
    info(`seed (${rows} score rows), ${name}`, `${fmt(median(r.map((x) => x.seed)), 0)} score rows/s`, `(median of ${runs})`);
    info(`replay, ${name}`, `${fmt(median(r.map((x) => x.replay)), 0)} score rows/s`, `(median of ${runs})`);
    const delayed = { after: median(r.map((x) => x.delayed.after)), before: median(r.map((x) => x.delayed.before)) };
    info(`free delayed view, ${name}`, `${fmt(delayed.after)} ms by bucket id`, `(${fmt(delayed.before)} ms by month range; median of ${runs})`);
  }

  await withEngines(async (env) => {
    const servers = [await meteredServer({}), await meteredServer(env)];
    try {
      const figures = servers.map(() => [] as { rps: number; p99: number }[]);
      for (const s of servers) await load(s.url, s.key, 2); // warm-up
      // The two take turns within each run: the machine's load drifts, each gets a share of it.
      for (let i = 0; i < runs; i++) for (const [k, s] of servers.entries()) figures[k]!.push(await load(s.url, s.key, seconds));
      const [e, g] = figures.map((f) => ({ rps: median(f.map((x) => x.rps)), p99: median(f.map((x) => x.p99)) })) as [{ rps: number; p99: number }, { rps: number; p99: number }];
      info('metered GET /v1/scores/AAPL, embedded', `${fmt(e.rps, 0)} req/s, p99 ${fmt(e.p99, 0)} ms`, `(median of ${runs})`);
      info('metered GET /v1/scores/AAPL, engines', `${fmt(g.rps, 0)} req/s, p99 ${fmt(g.p99, 0)} ms`, `(${fmt((g.rps / e.rps) * 100, 0)}% of embedded)`);
    } finally {
      for (const s of servers) await s.stop();
    }
  });
}
