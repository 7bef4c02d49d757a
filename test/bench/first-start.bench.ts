import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { readDemoKeys } from '../../src/app/demo-keys.js';
import { projectRoot } from '../../src/core/paths.js';
import { openEnginesSandbox } from '../support/engines-sandbox.js';
import { tempDir, testEnv } from '../support/server.js';
import { until } from '../support/processes.js';
import { fmt, info, median, report } from './stats.js';

/** The whole default demo (2019-01-02 to this clock), both sides. */
const NOW = '2026-11-27T12:00:00Z';
const CLI = join(projectRoot(), 'dist/src/app/cli/bin.js');

/** Spawns `args`; resolves with the first URL `pattern` finds in its stderr. */
function started(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, args, { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = until(() => pattern.test(err), 600_000, 100).then(() => pattern.exec(err)![1]!);
  return { child, url };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(timer);
}

/** Seconds from the spawn to the first metered `GET /v1/scores/AAPL` answered 200 with the quant demo key. */
async function timeToServe(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp, dir: string): Promise<number> {
  const t0 = performance.now();
  const { child, url } = started(args, env, pattern);
  try {
    const base = await url;
    const key = readDemoKeys(dir).find((k) => k.tier === 'quant')!.key;
    const served = () => fetch(`${base}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } }).then((res) => res.status === 200, () => false);
    await until(served, 120_000, 50);
    return (performance.now() - t0) / 1000;
  } finally {
    await stop(child);
  }
}

/** `npm start`'s first start: `scores serve` on an empty data directory (embedded store, in-process bus). */
async function embeddedFirstStart(): Promise<number> {
  const dir = tempDir('scores-bench-first-');
  return timeToServe([CLI, 'serve'], testEnv(dir, NOW), /listening on (http:\/\/\S+)/, dir);
}

/** `npm run fleet`'s first start (2 API processes, 2 workers) on freshly created databases of running engines (PostgreSQL + Kafka). */
async function fleetFirstStart(): Promise<number> {
  const sandbox = await openEnginesSandbox('firststart', NOW, { kafka: true });
  try {
    // Served once the front listens with its first API process (the progress line), or the final banner.
    const pattern = /(?:front(?: \([^)]+\))? serving on|scores fleet listening on) (http:\/\/\S+)/;
    return await timeToServe([CLI, 'fleet', 'up', '--api', '2', '--workers', '2', '--port', '0'], sandbox.env, pattern, sandbox.dir);
  } finally {
    await sandbox.drop();
  }
}

/**
 * Issue 41: a fresh fleet on the default demo serves within 2x of the embedded first start, the
 * two measured in turns in the same run. Skipped without the engines' variables.
 */
export async function benchFirstStart(runs: number): Promise<void> {
  if (!process.env['POSTGRES_URL'] || !process.env['KAFKA_BROKERS']) {
    process.stdout.write('SKIP  first start of a fleet: POSTGRES_URL and KAFKA_BROKERS not set (npm run engines starts them and prints them)\n');
    return;
  }
  const embedded: number[] = [];
  const fleet: number[] = [];
  for (let i = 0; i < runs; i++) {
    embedded.push(await embeddedFirstStart());
    fleet.push(await fleetFirstStart());
    process.stderr.write(`  run ${i + 1}/${runs}: first start to a served call ${fmt(embedded[i]!)} s embedded, ${fmt(fleet[i]!)} s fleet\n`);
  }
  const e = median(embedded);
  const f = median(fleet);
  info('first start, embedded (npm start, full demo)', `${fmt(e)} s`, `(median of ${runs}: ${embedded.map((x) => fmt(x)).join(', ')})`);
  report('first start, fleet (npm run fleet: 2 API, 2 workers, PostgreSQL + Kafka)', `${fmt(f)} s (${fmt(f / e, 2)}x)`, '<= 2x embedded', f <= 2 * e);
}
