/**
 * The soak's processes: the `scores` CLI and the server, both from dist/ (or from source with tsx
 * when the soak itself runs from source), on one data directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';

const root = projectRoot();
const fromSource = import.meta.url.endsWith('.ts');

/** `node <entry>` arguments for a module of the project, e.g. `src/app/main`. */
function entry(module: string): string[] {
  return fromSource ? ['--import', 'tsx', join(root, `${module}.ts`)] : [join(root, 'dist', `${module}.js`)];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `scores ARGS` to completion. */
export function cli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...entry('src/app/cli/bin'), ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr, ms: performance.now() - t0 })));
}

/** `scores ARGS`, which must succeed; its stdout. */
export async function cliOk(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const r = await cli(args, env);
  if (r.code !== 0) throw new Error(`scores ${args.join(' ')} exited ${r.code}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** A port free right now (the server is restarted on the same one, so the load never has to look it up again). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The server process (`dist/src/app/main.js`, what `npm start` runs), restarted on the same data
 * directory and port after each kill. Its output goes to `logFile`, one header line per start.
 */
export class ServerProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private starts = 0;

  constructor(
    readonly url: string,
    private readonly env: NodeJS.ProcessEnv,
    readonly logFile: string,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Spawns the server; does not wait for it (see `waitHealthy`). */
  start(): void {
    if (this.child) throw new Error('the server is already running');
    const fd = openSync(this.logFile, 'a');
    writeSync(fd, `\n===== start ${++this.starts} at ${new Date().toISOString()} =====\n`);
    const child = spawn(process.execPath, entry('src/app/main'), { cwd: root, env: this.env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        if (this.child === child) this.child = null;
        resolve();
      }),
    );
  }

  /** Polls GET /healthz until it answers 200; throws when the process exits first or `timeoutMs` passes. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const end = performance.now() + timeoutMs;
    for (;;) {
      if (!this.child) throw new Error(`the server exited while starting:\n${this.logTail()}`);
      try {
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (performance.now() > end) throw new Error(`the server did not answer /healthz 200 within ${timeoutMs} ms:\n${this.logTail()}`);
      await sleep(25);
    }
  }

  /** `kill -9`, and waits for the process to be gone. */
  async kill9(): Promise<void> {
    if (!this.child) throw new Error('no server to kill');
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (the clean stop: in-flight requests finish, the stores close); SIGKILL after 30 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
  }

  logTail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}
