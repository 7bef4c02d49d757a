import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { projectRoot } from '../../core/paths.js';
import { startFront } from './front.js';
import type { Front } from './front.types.js';
import { findNginx, startNginxFront } from './nginx-front.js';

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

/**
 * The front over `targets`: nginx when it is installed (Debian's nginx-light; a fraction of the
 * in-process front's CPU per call, docs/scaling.md), else the in-process front (front.ts).
 * FLEET_FRONT=nginx requires nginx; FLEET_FRONT=node keeps the in-process one.
 */
export async function openFront(targets: readonly string[], options: { port: number; host: string }, env: NodeJS.ProcessEnv = process.env): Promise<Front & { kind: 'nginx' | 'node' }> {
  const asked = env['FLEET_FRONT'];
  if (asked !== undefined && asked !== '' && asked !== 'nginx' && asked !== 'node') throw new Error(`FLEET_FRONT must be nginx or node, not ${asked}`);
  const nginx = asked === 'node' ? null : findNginx(env);
  if (asked === 'nginx' && !nginx) throw new Error('FLEET_FRONT=nginx but no nginx is installed (Debian: apt-get install nginx-light)');
  if (nginx) return { ...(await startNginxFront(nginx, targets, options)), kind: 'nginx' };
  return { ...(await startFront(targets, options)), kind: 'node' };
}

/** One `scores` process of the fleet; resolves once its JSON banner (stderr) names its URL. */
function startProcess(role: 'api' | 'worker', env: NodeJS.ProcessEnv, timeoutMs: number, spawned: Set<ChildProcess>, onLine: (line: string) => void): Promise<FleetProcess> {
  const args = role === 'api' ? ['serve', '--role', 'api', '--port', '0', '--json'] : ['worker', '--port', '0', '--json'];
  // The same entry as this process (dist's bin.js, or the source through tsx's --import).
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  spawned.add(child);
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
      passThrough(child, role, onLine);
      resolve({ role, url, pid: child.pid!, child });
    });
  });
}

/** Pino's levels from warn up: what a member says that its operator must see. */
const WARN = 40;

/**
 * A listening member's warnings and errors (and any line that is not a log record: a crash's
 * trace), passed on with its role and pid; its info lines stay its own. Its exit is said too.
 */
export function passThrough(child: ChildProcess, role: string, onLine: (line: string) => void): void {
  const who = `${role} (pid ${child.pid})`;
  createInterface({ input: child.stderr! }).on('line', (line) => {
    let level: unknown;
    try {
      level = (JSON.parse(line) as { level?: unknown }).level;
    } catch {
      level = undefined;
    }
    if (typeof level !== 'number' || level >= WARN) onLine(`[${who}] ${line}`);
  });
  // 'close': after the last line of its stderr, so the exit is said last.
  child.once('close', (code, signal) => onLine(`[${who}] exited (${signal ?? code})`));
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
 * The front, on this host, as the API processes' trusted proxy (TRUST_PROXY) unless one is named:
 * its X-Forwarded-For names the client for the per-client limits, and its connections, which carry
 * every client's calls, are not capped per address (src/app/http/client-limits.ts).
 */
const FRONT_ADDRESSES = 'loopback';

export interface FleetOptions {
  apis: number;
  workers: number;
  port: number;
  host: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** A line of progress for a person watching the start (engines, each process, the read models catching up). */
  onProgress?: (line: string) => void;
  /** A member's warning, error or exit once it listens (default: this process's stderr). */
  onMemberLine?: (line: string) => void;
  /** Aborted (a Ctrl-C while starting): every process started or starting is stopped, and the start fails. */
  signal?: AbortSignal;
}

/**
 * `scores fleet up`: the engines, `workers` worker processes (every job) side by side, then the
 * first API process (it seeds an empty store and listens once the read models hold its demo
 * accounts), then the other API processes side by side, then the front on `port`. Each process gets
 * PORT 0 (a free port) and the same data directory (the demo key file).
 */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const say = options.onProgress ?? (() => undefined);
  const started = performance.now();
  const since = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  const base = options.env ?? process.env;
  const env: NodeJS.ProcessEnv = { ...base, ...enginesEnvironment(base), TRUST_PROXY: base['TRUST_PROXY']?.trim() || FRONT_ADDRESSES };
  say(`engines ready (${env['READ_STORE'] === 'mongodb' ? 'PostgreSQL, MongoDB wire, Kafka' : 'PostgreSQL + Kafka'}) at ${since()}`);
  const processes: FleetProcess[] = [];
  const spawned = new Set<ChildProcess>();
  let front: Front | null = null;
  let stopping: Promise<void> | null = null;
  // Once: a Ctrl-C while starting and the failure it causes both stop the fleet.
  const stop = () =>
    (stopping ??= (async () => {
      await front?.close();
      for (const role of ['api', 'worker']) await Promise.all(processes.filter((p) => p.role === role).map(stopProcess));
      // Those still starting (an API process seeding) have no clean stop yet: the log is safe from a kill.
      for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    })());
  options.signal?.addEventListener('abort', () => void stop(), { once: true });
  const timeout = options.timeoutMs ?? 300_000;
  const start = async (role: 'api' | 'worker', n: number) => {
    const p = await startProcess(role, env, timeout, spawned, options.onMemberLine ?? ((line) => process.stderr.write(`${line}\n`)));
    if (options.signal?.aborted) throw new Error('the fleet was stopped while starting');
    processes.push(p);
    say(`${role} ${n} listening on ${p.url} (pid ${p.pid}) at ${since()}`);
    return p;
  };
  try {
    const workers = await Promise.all(Array.from({ length: options.workers }, (_, i) => start('worker', i + 1)));
    say('api 1 starting: it writes the demo history into an empty log and listens once the read models hold its demo accounts');
    const watching = watchReadModels(workers[0]!.url, say);
    try {
      await start('api', 1);
    } finally {
      watching.stop();
    }
    // The front serves through the first API process at once; the others join as they listen.
    const opened = await openFront(processes.filter((p) => p.role === 'api').map((p) => p.url), { port: options.port, host: options.host }, env);
    front = opened;
    say(`front (${opened.kind === 'nginx' ? 'nginx' : 'in-process'}) serving on ${front.url} at ${since()}${options.apis > 1 ? ` (api 1; ${options.apis - 1} more joining)` : ''}`);
    const joining = front;
    await Promise.all(Array.from({ length: options.apis - 1 }, async (_, i) => await joining.add((await start('api', i + 2)).url)));
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: front.url, processes, stop };
}

/** Says every 5 s how far the read models are behind the log, from a worker's /readyz, while the first API process waits for them. */
function watchReadModels(workerUrl: string, say: (line: string) => void): { stop(): void } {
  let last = '';
  const timer = setInterval(() => {
    fetch(`${workerUrl}/readyz`, { signal: AbortSignal.timeout(2_000) })
      .then((res) => res.json() as Promise<{ log_position?: string | null; lag_events?: number }>)
      .then((ready) => {
        if (ready.log_position == null || ready.lag_events === undefined) return;
        const head = Number(ready.log_position);
        const line = `read models: ${(head - ready.lag_events).toLocaleString('en-US')} of ${head.toLocaleString('en-US')} events projected`;
        if (line !== last) say((last = line));
      })
      .catch(() => undefined); // a late answer: the next look tells
  }, 5_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
