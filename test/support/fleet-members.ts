/**
 * The processes of a fleet under test (src/app/fleet/fleet.ts starts them): killed with -9,
 * replaced by the test the way a supervisor would (an API on its port, so the front finds it
 * again), and the leased jobs' hand-over watched through the workers' /readyz.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnCli } from './processes.js';

/** An API process or a worker of the fleet (a FleetProcess is one), or a whole service (`all`: `scores serve`, every job). */
export interface Member {
  role: 'api' | 'worker' | 'all';
  url: string;
  child: ChildProcess;
}

export type JobStates = { name: string; state: string }[];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

/**
 * `scores serve --role api` or `scores worker` on `port` (0: any); resolves once its JSON banner names
 * its URL. `spawned` is told of the process at once, so a test can kill it even while it starts.
 */
export function startMember(role: Member['role'], env: NodeJS.ProcessEnv, port: number, timeoutMs: number, spawned?: (child: ChildProcess) => void): Promise<Member> {
  const args =
    role === 'worker' ? ['worker', '--port', String(port), '--json'] : ['serve', ...(role === 'api' ? ['--role', 'api'] : []), '--port', String(port), '--json'];
  const { child, done } = spawnCli(args, env);
  spawned?.(child);
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`scores ${args.join(' ')} did not listen within ${timeoutMs} ms:\n${text.slice(-2000)}`));
    }, timeoutMs);
    void done.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`scores ${args.join(' ')} exited (${exit.code ?? exit.signal}) before listening:\n${text.slice(-2000)}`));
    });
    child.stderr!.on('data', (d: Buffer) => {
      text += d.toString();
      const url = /"listening":"(http:\/\/[^"]+)"/.exec(text)?.[1];
      if (!url) return;
      clearTimeout(timer);
      resolve({ role, url, child });
    });
  });
}

/** `kill -9`, and waits until the process is gone. */
export async function kill9(m: Member): Promise<void> {
  if (gone(m.child)) return;
  const exited = new Promise((r) => m.child.once('exit', r));
  m.child.kill('SIGKILL');
  await exited;
}

/** SIGTERM (a clean stop), SIGKILL after `graceMs`. */
export async function stopMember(m: Member, graceMs = 20_000): Promise<void> {
  if (gone(m.child)) return;
  const exited = new Promise((r) => m.child.once('exit', r));
  m.child.kill('SIGTERM');
  const timer = setTimeout(() => m.child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** GET `url` with a bounded wait: the status and parsed body, or null when nothing answered. */
async function probe(url: string): Promise<{ status: number; body: any } | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } catch {
    return null;
  }
}

/** Polls `<url>/<path>` until it answers 200; throws after `timeoutMs`. */
export async function waitOk(url: string, path: '/healthz' | '/readyz', timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs;
  while ((await probe(`${url}${path}`))?.status !== 200) {
    if (performance.now() > end) throw new Error(`${url}${path} did not answer 200 within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** A worker's jobs as its /readyz lists them (empty when it does not answer). */
export async function jobsOf(worker: Member): Promise<JobStates> {
  return ((await probe(`${worker.url}/readyz`))?.body?.jobs as JobStates | undefined) ?? [];
}

/** The leased jobs a worker runs now (not `projections`: every worker runs it, unleased). */
export async function ownedJobs(worker: Member): Promise<string[]> {
  return (await jobsOf(worker)).filter((j) => j.state === 'running' && j.name !== 'projections').map((j) => j.name);
}

/**
 * After the owner of `jobs` was killed at `killedAt` (performance.now()): for each job, the ms until
 * another worker's /readyz first shows it `running` (polled every 100 ms); Infinity past `timeoutMs`.
 */
export async function handOver(jobs: readonly string[], others: () => readonly Member[], killedAt: number, timeoutMs: number): Promise<Map<string, number>> {
  const taken = new Map<string, number>();
  while (taken.size < jobs.length && performance.now() - killedAt < timeoutMs) {
    const states = (await Promise.all(others().map(jobsOf))).flat();
    const at = performance.now() - killedAt;
    for (const job of jobs) if (!taken.has(job) && states.some((s) => s.name === job && s.state === 'running')) taken.set(job, at);
    await sleep(100);
  }
  for (const job of jobs) if (!taken.has(job)) taken.set(job, Infinity);
  return taken;
}
