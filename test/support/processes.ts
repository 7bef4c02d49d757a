import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';

/**
 * How a test starts one of the service's programs (`src/…/x.ts`): from the build `npm test` made
 * just before it (SCORES_TEST_CLI=dist: a process starts in about 1 s, where compiling the sources
 * with tsx takes 3), else from the sources (a test file run alone while editing).
 */
export function programArgs(source: string, built = process.env['SCORES_TEST_CLI'] === 'dist'): string[] {
  return built ? [join(projectRoot(), 'dist', source.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', source];
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `scores` CLI (programArgs; `built`: from dist/ whatever SCORES_TEST_CLI says, for a
 * bench that times a command) as a separate process; with `umask`, started by a shell under that
 * umask (as a login shell with Debian's default 022 would start it); with `group`, in a process
 * group of its own, as a terminal starts a command (a Ctrl-C is `process.kill(-pid, 'SIGINT')`).
 */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, options: { umask?: string; built?: boolean; group?: boolean } = {}): { child: ChildProcess; done: Promise<Exit> } {
  const command = [process.execPath, ...programArgs('src/app/cli/bin.ts', options.built), ...args];
  const [file, argv] = options.umask ? ['/bin/sh', ['-c', `umask ${options.umask} && exec "$0" "$@"`, ...command]] : [command[0]!, command.slice(1)];
  const child = spawn(file, argv, {
    cwd: projectRoot(),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group ?? false,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Exit>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export async function runCli(args: string[], env: NodeJS.ProcessEnv, options: { built?: boolean } = {}): Promise<Exit> {
  return spawnCli(args, env, options).done;
}

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** `npm start` (src/app/main.ts, programArgs) as a separate process: resolves once its start banner (stderr) says it listens. */
export async function startServerProcess(env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const server = spawn(process.execPath, programArgs('src/app/main.ts'), { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  server.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((r) => server.on('exit', r));
  const stop = async () => {
    server.kill('SIGTERM');
    await exited;
  };
  const listening = /listening on (http:\/\/\S+)/;
  try {
    await until(() => listening.test(out), timeoutMs);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: listening.exec(out)![1]!, pid: server.pid!, stop };
}

/** A `scores` CLI process that listens (`serve`, `worker`). */
export interface ListeningCli {
  url: string;
  child: ChildProcess;
  done: Promise<Exit>;
}

/** Spawns the CLI; resolves once its stderr names the URL it listens on, rejects if it exits first. */
export async function startListening(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 240_000): Promise<ListeningCli> {
  const { child, done } = spawnCli(args, env);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const listening = /listening on (http:\/\/\S+)/;
  await until(() => listening.test(err) || child.exitCode !== null, timeoutMs, 100);
  if (!listening.test(err)) throw new Error(`scores ${args.join(' ')} exited before listening:\n${(await done).stderr}`);
  return { url: listening.exec(err)![1]!, child, done };
}

/** Sends `signal` to a process still running and waits for its exit (null: it had exited already). */
export async function stopListening(proc: ListeningCli | null, signal: NodeJS.Signals = 'SIGTERM'): Promise<Exit | null> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return null;
  proc.child.kill(signal);
  return proc.done;
}
