import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { projectRoot } from '../../src/core/paths.js';
import { runCli, until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median, report } from './stats.js';

function startServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['dist/src/app/main.js'], { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  // The start banner is on stderr (stdout is the JSON log stream).
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const listening = /listening on (http:\/\/localhost:\d+)/;
  return until(() => listening.test(out), 120_000).then(() => ({ child, url: listening.exec(out)![1]! }));
}

async function newKey(tier: string, env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(['keys', 'create', '--tier', tier, '--json'], env);
  if (r.code !== 0) throw new Error(r.stderr);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

/** A call every 25 ms for `ms` (40 a second, under the customer's own rate limit): each one's latency (ms). */
async function latencies(url: string, key: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await fetch(url, { headers: { 'X-API-Key': key } });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`the other customer's call answered ${r.status}`);
    const took = performance.now() - t0;
    out.push(took);
    if (took < 25) await new Promise((r) => setTimeout(r, 25 - took));
  }
  return out;
}

/**
 * One free key floods the server with 2,000 `GET /v1/track-record` (its largest free body) over
 * 50 connections, while another customer calls `GET /v1/scores/AAPL` one call after another:
 * that customer's median latency, against the same calls with no flood (same run). The free
 * key's rate limit refuses most of the flood before any read-model work, so the flood costs the
 * others little.
 */
export async function benchFlood(runs: number): Promise<void> {
  const dir = tempDir('scores-bench-flood-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  const server = await startServer(env);
  try {
    const flooder = await newKey('free', env);
    const other = await newKey('builder', env);
    await new Promise((r) => setTimeout(r, 1500));
    const aapl = `${server.url}/v1/scores/AAPL`;
    await latencies(aapl, other, 500);
    const quiet: number[] = [];
    const flooded: number[] = [];
    const statuses = { ok: 0, limited: 0 };
    for (let i = 0; i < runs; i++) {
      quiet.push(median(await latencies(aapl, other, 2000)));
      const flood = autocannon({ url: `${server.url}/v1/track-record`, connections: 50, amount: 2000, headers: { 'X-API-Key': flooder } });
      const during = latencies(aapl, other, 1500);
      const [f, l] = await Promise.all([flood, during]);
      statuses.ok += f['2xx'];
      statuses.limited += f.non2xx;
      flooded.push(median(l));
      // The free key's bucket refills between runs.
      await new Promise((r) => setTimeout(r, 2500));
    }
    const q = median(quiet);
    const m = median(flooded);
    report("another customer's GET /v1/scores/AAPL during a free key's flood of 2,000 GET /v1/track-record", `${fmt(m)} ms median`, '< 20 ms', m < 20);
    info('  the same with no flood (baseline, same run)', `${fmt(q)} ms median`, `(flood answered ${statuses.ok}, refused ${statuses.limited} over ${runs} runs)`);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}
