import autocannon from 'autocannon';
import { join } from 'node:path';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { startFleet } from '../../src/app/fleet/fleet.js';
import { projectRoot } from '../../src/core/paths.js';
import { runCli, until } from '../support/processes.js';
import { inEnginesSandbox } from '../support/engines-sandbox.js';
import { fmt, info, median } from './stats.js';

const ENGINES = ['POSTGRES_URL', 'MONGODB_URI', 'KAFKA_BROKERS'] as const;
/** A short demo history: the fleet's first API process seeds it into FerretDB's read models. */
const NOW = '2019-03-29T12:00:00Z';
const CLI = join(projectRoot(), 'dist/src/app/cli/bin.js');

/** A database (log), a read-model database and a topic prefix of their own, dropped afterwards. */
function isolated<T>(name: string, run: (env: Record<string, string>, dir: string) => Promise<T>): Promise<T> {
  return inEnginesSandbox(name, NOW, { kafka: true, extra: { PUBLIC_BASE_URL: 'http://localhost' } }, (sandbox) => run(sandbox.env as Record<string, string>, sandbox.dir));
}

/** `count` quant accounts, each with a key and a rate no load here reaches (the limit is still checked on every call). */
async function quantKeys(env: Record<string, string>, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const made = await runCli(['keys', 'create', '--tier', 'quant', '--json'], env);
    if (made.code !== 0) throw new Error(made.stderr);
    const { account_id, key } = JSON.parse(made.stdout) as { account_id: string; key: string };
    const limit = await runCli(['rate-limit', 'set', '--account', account_id, '--per-second', '1000000'], env);
    if (limit.code !== 0) throw new Error(limit.stderr);
    keys.push(key);
  }
  return keys;
}

/** autocannon through `url` at 50 connections, the keys taking turns; refuses a run with a non-2xx answer. */
async function loadKeys(url: string, keys: string[], seconds: number): Promise<{ rps: number; p99: number }> {
  const r = await autocannon({ url, connections: 50, duration: seconds, requests: keys.map((k) => ({ method: 'GET', headers: { 'X-API-Key': k } })) });
  if (r.non2xx > 0) throw new Error(`${url}: ${r.non2xx} non-2xx responses`);
  return { rps: r.requests.average, p99: r.latency.p99 };
}

/** Metered GET /v1/scores/AAPL through the front of a fleet of `apis` API processes and one worker. */
async function fleetThroughput(apis: number, runs: number, seconds: number): Promise<{ rps: number; p99: number }> {
  return isolated(`scale${apis}`, async (env) => {
    process.argv[1] = CLI; // the fleet's processes run the built CLI, as `npm run fleet` does
    const fleet = await startFleet({ apis, workers: 1, port: 0, host: '127.0.0.1', env });
    try {
      const keys = await quantKeys(env, 8);
      const url = `${fleet.url}/v1/scores/AAPL`;
      await until(async () => (await fetch(url, { headers: { 'X-API-Key': keys[0]! } })).status === 200, 60_000, 200);
      await loadKeys(url, keys, 2); // warm-up
      const figures: { rps: number; p99: number }[] = [];
      for (let i = 0; i < runs; i++) figures.push(await loadKeys(url, keys, seconds));
      return { rps: median(figures.map((f) => f.rps)), p99: median(figures.map((f) => f.p99)) };
    } finally {
      await fleet.stop();
    }
  });
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

/** One leased job's hand-over: two workers, the owner killed (kill -9), until the other runs it. */
async function handOver(runs: number): Promise<number[]> {
  return isolated('handover', async (env) => {
    const { spawn } = await import('node:child_process');
    type Worker = { url: string; kill(): void };
    const startWorker = async (jobs = 'alerts'): Promise<Worker> => {
      const child = spawn(process.execPath, [CLI, 'worker', '--jobs', jobs, '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      await until(() => /listening on (http:\/\/\S+)/.test(err) || child.exitCode !== null, 120_000, 100);
      const url = /listening on (http:\/\/\S+)/.exec(err)?.[1];
      if (!url) throw new Error(`worker did not start:\n${err}`);
      return { url, kill: () => child.kill('SIGKILL') };
    };
    const state = async (w: Worker) => {
      const body = (await (await fetch(`${w.url}/readyz`)).json()) as { jobs?: { name: string; state: string }[] };
      return body.jobs?.find((j) => j.name === 'alerts')?.state;
    };
    // The leased job's workers follow what a projecting worker commits (alerts read the usage read models).
    const projector = await startWorker('projections');
    const workers = [await startWorker(), await startWorker()];
    const times: number[] = [];
    try {
      for (let i = 0; i < runs; i++) {
        let owner: Worker | undefined;
        await until(async () => {
          const states = await Promise.all(workers.map(state));
          owner = workers[states.indexOf('running')];
          return states.includes('running') && states.includes('standby');
        }, 60_000, 100);
        const other = workers.find((w) => w !== owner)!;
        const killedAt = performance.now();
        owner!.kill();
        await until(async () => (await state(other)) === 'running', 60_000, 50);
        times.push(performance.now() - killedAt);
        workers.splice(workers.indexOf(owner!), 1, await startWorker());
      }
      return times;
    } finally {
      for (const w of [...workers, projector]) w.kill();
    }
  });
}

/**
 * Scale-out on the engines (INFO: the engines, the front and every process share these 2 cores):
 * metered throughput through the front with one and two API processes, the ledger ceiling of one
 * account from one and two writers, and a leased job's hand-over after kill -9.
 */
export async function benchScaleOut(runs: number, seconds = 8): Promise<void> {
  const unset = ENGINES.filter((name) => !process.env[name]);
  if (unset.length > 0) {
    process.stdout.write(`SKIP  scale-out on the engines: ${unset.join(', ')} not set (npm run engines starts them and prints them)\n`);
    return;
  }
  const one = await fleetThroughput(1, runs, seconds);
  const two = await fleetThroughput(2, runs, seconds);
  info('metered via the front, 1 API process', `${fmt(one.rps, 0)} req/s, p99 ${fmt(one.p99, 0)} ms`, `(baseline; 8 accounts, median of ${runs})`);
  info('metered via the front, 2 API processes', `${fmt(two.rps, 0)} req/s, p99 ${fmt(two.p99, 0)} ms`, `(${fmt(two.rps / one.rps, 2)}x of 1 API)`);

  await isolated('ceiling', async (env) => {
    const single: number[] = [];
    const double: number[] = [];
    for (let i = 0; i < runs; i++) {
      single.push(await ledgerCeiling(env, 1, 3000));
      double.push(await ledgerCeiling(env, 2, 3000));
    }
    info('one account, debits/s, 1 writer (PostgreSQL)', `${fmt(median(single), 0)}/s`, `(baseline; 50 in flight, median of ${runs})`);
    info('one account, debits/s, 2 writers (PostgreSQL)', `${fmt(median(double), 0)}/s`, `(${fmt(median(double) / median(single), 2)}x of 1 writer)`);
  });

  const times = await handOver(runs);
  info('leased job hand-over after kill -9', `${fmt(median(times) / 1000, 1)} s`, `(median of ${runs}; lease ttl 15 s; max ${fmt(Math.max(...times) / 1000, 1)} s)`);
}
