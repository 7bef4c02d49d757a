// Shared pieces of `npm run engines`: where things live, ports, processes, waiting.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Everything installed or written lives here (git-ignored); deleting it starts from scratch. */
export const HOME = process.env.ENGINES_DIR ?? join(ROOT, '.engines');
export const HOST = '127.0.0.1';

function port(name, fallback) {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${name}=${value} is not a port`);
  return n;
}

/** Off the engines' usual ports, so that a server the developer already runs is left alone. */
export const PORTS = {
  kafka: port('ENGINES_KAFKA_PORT', 39092),
  postgresql: port('ENGINES_POSTGRES_PORT', 35432),
  ferretdb: port('ENGINES_FERRETDB_PORT', 37017),
  /** Its HTTPS listener takes the next port. */
  stripeMock: port('ENGINES_STRIPE_MOCK_PORT', 32111),
};
/** The KRaft controller listens next to the broker. */
PORTS.kafkaController = PORTS.kafka + 1;

export function log(message) {
  process.stderr.write(`engines: ${message}\n`);
}

export function seconds(since) {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

/** Raised for what the user must fix (a missing toolchain, a taken port): printed without a stack. */
export class EngineError extends Error {}

export function dir(...parts) {
  const path = join(HOME, ...parts);
  mkdirSync(path, { recursive: true });
  return path;
}

/** Runs a command to completion; on failure, throws with the end of its output. */
export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-25).join('\n');
    throw new EngineError(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${output}`);
  }
  return result.stdout ?? '';
}

/** Whether `command` can be run (it is on the PATH or is a path). */
export function has(command) {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { stdio: 'ignore' }).status === 0;
}

/** Starts a server in the background, its output appended to `logFile`, and records its pid. */
export function daemon(command, args, { logFile, pidFile, cwd, env }) {
  const out = openSync(logFile, 'a');
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', out, out] });
  child.unref();
  writeFileSync(pidFile, String(child.pid));
  return child.pid;
}

export function readPid(pidFile) {
  if (!existsSync(pidFile)) return null;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

export function alive(pid) {
  if (pid === null) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export async function stopPid(pidFile, graceMs = 30_000) {
  const pid = readPid(pidFile);
  if (!alive(pid)) {
    rmSync(pidFile, { force: true });
    return false;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await sleep(200);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(pidFile, { force: true });
  return true;
}

export function portOpen(p) {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port: p });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Refuses to start on a port another process already listens on. */
export async function assertPortFree(p, what, variable) {
  if (await portOpen(p)) {
    throw new EngineError(`port ${p} (${what}) is taken by a process these scripts did not start: stop it, or pick another port with ${variable}=N`);
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` (which resolves truthy when healthy, or throws) until it succeeds, the process
 * `pid` died, or `timeoutMs` passed; a failure quotes the end of `logFile`.
 */
export async function waitHealthy(label, check, { timeoutMs, pid, logFile }) {
  const deadline = Date.now() + timeoutMs;
  let last = null;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (pid !== undefined && !alive(pid)) throw new EngineError(`${label} exited during start-up${tail(logFile)}`);
    if (Date.now() > deadline) {
      throw new EngineError(`${label} not healthy within ${timeoutMs / 1000} s${last ? ` (${last.message})` : ''}${tail(logFile)}`);
    }
    await sleep(250);
  }
}

function tail(logFile) {
  if (!logFile || !existsSync(logFile)) return '';
  const lines = readFileSync(logFile, 'utf8').trim().split('\n').slice(-20).join('\n');
  return `; the end of ${logFile}:\n${lines}`;
}
