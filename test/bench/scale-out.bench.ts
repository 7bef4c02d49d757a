import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { projectRoot } from '../../src/core/paths.js';
import { inEnginesSandbox, unsetEngines } from '../support/engines-sandbox.js';
import { until } from '../support/processes.js';
import { seedAndReplay } from './engines.bench.js';
import { NOW, servingRuns, TIERS, type Load, type ServingRuns } from './scale-serving.js';
import { fmt, info, median, report } from './stats.js';

/** The recommended scaled deployment's engines: the log, read models and rate buckets on PostgreSQL, the bus on Kafka. */
const ENGINES = ['POSTGRES_URL', 'KAFKA_BROKERS'] as const;
const CLI = join(projectRoot(), 'dist/src/app/cli/bin.js');

const medianLoad = (xs: Load[]): Load => ({ rps: median(xs.map((x) => x.rps)), p99: median(xs.map((x) => x.p99)) });
const reqs = (l: Load) => `${fmt(l.rps, 0)} req/s, p99 ${fmt(l.p99, 0)} ms`;

function printServing(s: ServingRuns, runs: number): void {
  const [embedded, one, two, soloOne, soloTwo] = [s.embedded, s.oneApi, s.twoApis, s.soloOne, s.soloTwo].map(medianLoad) as [Load, Load, Load, Load, Load];
  info('metered, embedded all-in-one', reqs(embedded), `(baseline; 8 quant accounts, 50 connections, median of ${runs})`);
  info('metered, fleet of 1 API via the front', reqs(one), '(PostgreSQL + Kafka, 1 worker)');
  report('fleet 1 API / embedded throughput', `${fmt((one.rps / embedded.rps) * 100, 0)}%`, '>= 50%', one.rps / embedded.rps >= 0.5);
  report('fleet 1 API / embedded p99', `${fmt(one.p99 / embedded.p99, 2)}x`, '<= 3x', one.p99 / embedded.p99 <= 3);
  info('metered, fleet of 2 APIs via the front', reqs(two), `(${s.split})`);
  report('fleet 2 APIs / 1 API throughput', `${fmt((two.rps / one.rps) * 100, 0)}%`, '>= 100%', two.rps / one.rps >= 1);
  const tiers = Object.fromEntries(TIERS.map((t) => [t, { median: median(s.tiers.map((r) => r[t].median)), p99: median(s.tiers.map((r) => r[t].p99)) }]));
  for (const t of TIERS) info(`GET /v1/scores/AAPL, ${t}, fleet of 1 API`, `median ${fmt(tiers[t]!.median, 2)} ms, p99 ${fmt(tiers[t]!.p99, 1)} ms`, `(200 calls one at a time, median of ${runs})`);
  const ratio = tiers['free']!.median / tiers['quant']!.median;
  report('free / quant median latency', `${fmt(ratio, 2)}x`, '<= 2x', ratio <= 2);
  info('one account via the front, 1 API', reqs(soloOne), '(one quant key, 50 connections)');
  info('one account via the front, 2 APIs', reqs(soloTwo));
  report('one account, 2 APIs / 1 API', `${fmt(soloTwo.rps / soloOne.rps, 2)}x`, '>= 0.8x', soloTwo.rps / soloOne.rps >= 0.8);
}

/** Seed and replay embedded and with the log and read models on PostgreSQL (in-process bus: no message crosses it), in turns. */
async function benchSeedAndReplay(runs: number): Promise<void> {
  const embedded: Awaited<ReturnType<typeof seedAndReplay>>[] = [];
  const postgres: typeof embedded = [];
  for (let i = 0; i < runs; i++) {
    embedded.push(await seedAndReplay({}, NOW));
    postgres.push(await inEnginesSandbox('scaleseed', NOW, { readStore: 'postgres' }, (sandbox) => seedAndReplay(sandbox.vars, NOW)));
    process.stderr.write(`  run ${i + 1}: seed ${fmt(embedded[i]!.seed, 0)} / ${fmt(postgres[i]!.seed, 0)}, replay ${fmt(embedded[i]!.replay, 0)} / ${fmt(postgres[i]!.replay, 0)} score rows/s (embedded / PostgreSQL)\n`);
  }
  const med = (r: typeof embedded, figure: 'seed' | 'replay') => median(r.map((x) => x[figure]));
  const [seedE, seedP, replayE, replayP] = [med(embedded, 'seed'), med(postgres, 'seed'), med(embedded, 'replay'), med(postgres, 'replay')];
  const rows = embedded[0]!.rows.toLocaleString('en-US');
  info(`seed (${rows} score rows), embedded`, `${fmt(seedE, 0)} rows/s`, `(median of ${runs})`);
  info('seed, PostgreSQL log and read models', `${fmt(seedP, 0)} rows/s`, `(${fmt((seedP / seedE) * 100, 0)}% of embedded)`);
  info('replay, embedded', `${fmt(replayE, 0)} rows/s`, `(median of ${runs})`);
  report('replay, PostgreSQL / embedded rows/s', `${fmt((replayP / replayE) * 100, 0)}% (${fmt(replayP, 0)}/s)`, '>= 25%', replayP / replayE >= 0.25);
}

/**
 * Durable debits per second on ONE account's ledger stream, 50 in flight, from `writers` service
 * instances on one log (as that many API processes would): the stream has one writer at a time,
 * so a second writer adds conflicts (each retried on the new revision), not throughput.
 */
async function ledgerCeiling(env: Record<string, string>, writers: number, total: number): Promise<number> {
  const services: Services[] = [];
  for (let i = 0; i < writers; i++) services.push(await openServices(loadConfig({ ...env, SCORES_DEMO: 'off' })));
  try {
    const { account_id } = await createAccountWithKey(services[0]!, { tier: 'enterprise' });
    let issued = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async (_, lane) => {
        const s = services[lane % writers]!;
        while (issued < total) {
          const n = issued++;
          await s.ledger.debit(account_id, { request_id: `r${n}`, endpoint: 'scores', channel: 'rest', cost: 2 });
        }
      }),
    );
    return total / ((performance.now() - t0) / 1000);
  } finally {
    for (const s of services) await s.close();
  }
}

async function benchLedgerWriters(runs: number): Promise<void> {
  await inEnginesSandbox('ceiling', NOW, {}, async (sandbox) => {
    const env = sandbox.env as Record<string, string>;
    const [single, double] = [[] as number[], [] as number[]];
    for (let i = 0; i < runs; i++) {
      single.push(await ledgerCeiling(env, 1, 3000));
      double.push(await ledgerCeiling(env, 2, 3000));
    }
    info("one account's ledger, 1 writer", `${fmt(median(single), 0)} debits/s`, `(baseline; PostgreSQL, 50 in flight, ledger services direct, median of ${runs})`);
    info("one account's ledger, 2 writers", `${fmt(median(double), 0)} debits/s`, `(${fmt(median(double) / median(single), 2)}x of 1 writer: what key routing avoids)`);
  });
}

type Worker = { url: string; kill(): void };

async function startWorker(env: NodeJS.ProcessEnv, jobs: string): Promise<Worker> {
  const child = spawn(process.execPath, [CLI, 'worker', '--jobs', jobs, '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  await until(() => /listening on (http:\/\/\S+)/.test(err) || child.exitCode !== null, 120_000, 100);
  const url = /listening on (http:\/\/\S+)/.exec(err)?.[1];
  if (!url) throw new Error(`worker did not start:\n${err}`);
  return { url, kill: () => child.kill('SIGKILL') };
}

async function alertsState(w: Worker): Promise<string | undefined> {
  const body = (await (await fetch(`${w.url}/readyz`)).json()) as { jobs?: { name: string; state: string }[] };
  return body.jobs?.find((j) => j.name === 'alerts')?.state;
}

/** One leased job's hand-over: two workers, the owner killed (kill -9), until the other runs it. */
async function handOver(runs: number): Promise<number[]> {
  return inEnginesSandbox('handover', NOW, { kafka: true, extra: { PUBLIC_BASE_URL: 'http://localhost' } }, async ({ env }) => {
    // The leased job's workers follow what a projecting worker commits (alerts read the usage read models).
    const projector = await startWorker(env, 'projections');
    const workers = [await startWorker(env, 'alerts'), await startWorker(env, 'alerts')];
    const times: number[] = [];
    try {
      for (let i = 0; i < runs; i++) {
        let owner: Worker | undefined;
        await until(async () => {
          const states = await Promise.all(workers.map(alertsState));
          owner = workers[states.indexOf('running')];
          return states.includes('running') && states.includes('standby');
        }, 60_000, 100);
        const other = workers.find((w) => w !== owner)!;
        const killedAt = performance.now();
        owner!.kill();
        await until(async () => (await alertsState(other)) === 'running', 60_000, 50);
        times.push(performance.now() - killedAt);
        workers.splice(workers.indexOf(owner!), 1, await startWorker(env, 'alerts'));
      }
      return times;
    } finally {
      for (const w of [...workers, projector]) w.kill();
    }
  });
}

/**
 * Scale-out on the recommended deployment (PostgreSQL + Kafka), each figure beside its baseline
 * measured in the same run on the same machine: the fleet through its front against the embedded
 * all-in-one, two API processes against one, the tiers' latency on the fleet, seed and replay on
 * PostgreSQL against embedded, one account's calls over two replicas against one; then, as INFO,
 * one account's ledger from one and two writers and a leased job's hand-over after kill -9.
 */
export async function benchScaleOut(runs: number, seconds = 8): Promise<void> {
  const unset = unsetEngines(ENGINES);
  if (unset.length > 0) {
    process.stdout.write(`SKIP  scale-out on the engines: ${unset.join(', ')} not set (npm run engines starts them and prints them)\n`);
    return;
  }
  const t0 = performance.now();
  printServing(await servingRuns(runs, seconds), runs);
  await benchSeedAndReplay(runs);
  await benchLedgerWriters(runs);
  const times = await handOver(runs);
  info('leased job hand-over after kill -9', `${fmt(median(times) / 1000, 1)} s`, `(median of ${runs}; lease ttl 15 s; max ${fmt(Math.max(...times) / 1000, 1)} s)`);
  info('scale-out, the whole run', `${fmt((performance.now() - t0) / 60_000, 1)} min`);
}
