import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../core/paths.js';
import { startFront, type Front } from './front.js';

/** The engines a fleet runs on, by read store: PostgreSQL + Kafka unless READ_STORE=mongodb asks for FerretDB (or MongoDB) too. */
const ENGINES = {
  postgres: { variables: ['POSTGRES_URL', 'KAFKA_BROKERS'], names: ['postgresql', 'kafka'] },
  mongodb: { variables: ['POSTGRES_URL', 'MONGODB_URI', 'KAFKA_BROKERS'], names: ['postgresql', 'ferretdb', 'kafka'] },
} as const;

export interface FleetProcess {
  role: 'api' | 'worker';
  url: string;
  pid: number;
  child: ChildProcess;
}

export interface Fleet {
  /** The front's URL: the base URL of the fleet. */
  url: string;
  processes: FleetProcess[];
  /** Stops the front, then every process (SIGTERM: each finishes cleanly), workers last. */
  stop(): Promise<void>;
}

/**
 * The engines' environment, with the read store chosen: the variables given when they are all set,
 * else what `scripts/engines/engines.mjs` prints for the engines the read store needs (it starts
 * those not running; idempotent). The recommended deployment is PostgreSQL (log, read models, rate
 * buckets, export files) + Kafka (the bus); `READ_STORE=mongodb` keeps the read models on MongoDB.
 */
export function enginesEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const readStore = env['READ_STORE'] === 'mongodb' ? 'mongodb' : 'postgres';
  const { variables, names } = ENGINES[readStore];
  const chosen = { READ_STORE: readStore };
  if (variables.every((name) => env[name])) return chosen;
  const script = join(projectRoot(), 'scripts/engines/engines.mjs');
  const run = spawnSync(process.execPath, [script, 'start', ...names], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (run.status !== 0) throw new Error(`the engines did not start (${script} exited ${run.status})`);
  const pairs = run.stdout.split('\n').flatMap((line) => {
    const m = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(['"]?)(.*)\2$/.exec(line.trim());
    return m ? [[m[1]!, m[3]!] as const] : [];
  });
  return { ...Object.fromEntries(pairs), ...chosen };
}

/** One `scores` process of the fleet; resolves once its JSON banner (stderr) names its URL. */
function startProcess(role: 'api' | 'worker', env: NodeJS.ProcessEnv, timeoutMs: number): Promise<FleetProcess> {
  const args = role === 'api' ? ['serve', '--role', 'api', '--port', '0', '--json'] : ['worker', '--port', '0', '--json'];
  // The same entry as this process (dist's bin.js, or the source through tsx's --import).
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => fail(new Error(`${role} did not listen within ${timeoutMs} ms`)), timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${text.slice(-2000)}`));
    };
    child.once('exit', (code) => fail(new Error(`${role} exited (${code}) before listening`)));
    child.stderr.on('data', (d: Buffer) => {
      text += d.toString();
      const url = /"listening":"(http:\/\/[^"]+)"/.exec(text)?.[1];
      if (!url) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stderr.removeAllListeners('data');
      child.stderr.resume();
      resolve({ role, url, pid: child.pid!, child });
    });
  });
}

/** SIGTERM, and SIGKILL if the process has not exited 30 s later (it bounds its own stop at 25 s). */
async function stopProcess(p: FleetProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/**
 * `scores fleet up`: the engines, `workers` worker processes (every job), then `apis` API
 * processes one after another (the first seeds an empty store), then the round-robin front on
 * `port`. Each process gets PORT 0 (a free port) and the same data directory (the demo key file).
 */
export async function startFleet(options: { apis: number; workers: number; port: number; host: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Fleet> {
  const base = options.env ?? process.env;
  const env = { ...base, ...enginesEnvironment(base) };
  const processes: FleetProcess[] = [];
  let front: Front | null = null;
  const stop = async () => {
    await front?.close();
    for (const role of ['api', 'worker']) await Promise.all(processes.filter((p) => p.role === role).map(stopProcess));
  };
  try {
    for (let i = 0; i < options.workers; i++) processes.push(await startProcess('worker', env, options.timeoutMs ?? 300_000));
    for (let i = 0; i < options.apis; i++) processes.push(await startProcess('api', env, options.timeoutMs ?? 300_000));
    front = await startFront(processes.filter((p) => p.role === 'api').map((p) => p.url), { port: options.port, host: options.host });
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: front.url, processes, stop };
}
