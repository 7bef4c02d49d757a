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

/** A call every `everyMs` for `ms` (40 a second by default, under the caller's own rate limit): each one's latency (ms). */
async function latencies(url: string, key: string, ms: number, everyMs = 25): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await fetch(url, { headers: { 'X-API-Key': key } });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
    const took = performance.now() - t0;
    out.push(took);
    if (took < everyMs) await new Promise((r) => setTimeout(r, everyMs - took));
  }
  return out;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

/**
 * Free endpoints under a flood. First, `GET /v1/meta` called again and again (its dataset
 * statistics are built once per read-model position, issue 28 item 2): its median latency while
 * another customer's paid calls move the log. Then, for each of the two largest free answers
 * (`/v1/track-record`, `/v1/meta`), one free key floods the server with 2,000 calls over 50
 * connections while another customer calls `GET /v1/scores/AAPL` one call after another: that
 * customer's median latency, against the same calls with no flood (same run). The free key's
 * rate limit (10/s, burst 20) serves a few dozen and refuses the rest before any read-model work;
 * the served ones cost a lookup, not a build, so the flood costs the others little.
 */
export async function benchFlood(runs: number): Promise<void> {
  const dir = tempDir('scores-bench-flood-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  const server = await startServer(env);
  try {
    const other = await newKey('builder', env);
    const reader = await newKey('enterprise', env);
    await new Promise((r) => setTimeout(r, 1500));
    await latencies(`${server.url}/v1/scores/AAPL`, other, 500);
    await repeatedMeta(server.url, reader, other, runs);
    await pacedMeta(server.url, await newKey('free', env), other, runs);
    for (const path of ['/v1/track-record', '/v1/meta']) await flood(server.url, path, await newKey('free', env), other, runs);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Repeated meta, 100 a second, while the other customer's paid calls append debits. */
async function repeatedMeta(url: string, reader: string, other: string, runs: number): Promise<void> {
  const aapl = `${url}/v1/scores/AAPL`;
  await latencies(`${url}/v1/meta`, reader, 300, 10);
  const metaMedians: number[] = [];
  const metaAll: number[] = [];
  const besideMedians: number[] = [];
  for (let i = 0; i < runs; i++) {
    const [m, b] = await Promise.all([latencies(`${url}/v1/meta`, reader, 2000, 10), latencies(aapl, other, 2000)]);
    metaMedians.push(median(m));
    metaAll.push(...m);
    besideMedians.push(median(b));
  }
  const mm = median(metaMedians);
  report('repeated GET /v1/meta (100/s, beside paid calls)', `${fmt(mm)} ms median`, '< 5 ms', mm < 5);
  info('  its p99', `${fmt(p99(metaAll))} ms`, `(${metaAll.length} calls)`);
  info('  the paid GET /v1/scores/AAPL beside it', `${fmt(median(besideMedians))} ms median`, '(the cheapest metered call, for scale)');
}

/** A free key calling meta at its rate limit (10/s: every call served, none refused). */
async function pacedMeta(url: string, paced: string, other: string, runs: number): Promise<void> {
  const aapl = `${url}/v1/scores/AAPL`;
  const quiet: number[] = [];
  const during: number[] = [];
  const quietAll: number[] = [];
  const duringAll: number[] = [];
  for (let i = 0; i < runs; i++) {
    const q = await latencies(aapl, other, 1500);
    const [, l] = await Promise.all([latencies(`${url}/v1/meta`, paced, 1500, 100), latencies(aapl, other, 1500)]);
    quiet.push(median(q));
    during.push(median(l));
    quietAll.push(...q);
    duringAll.push(...l);
  }
  const m = median(during);
  report("another customer's GET /v1/scores/AAPL while a free key calls GET /v1/meta at its 10/s", `${fmt(m)} ms median`, '< 20 ms', m < 20);
  info('  the same with no meta calls (baseline, same run)', `${fmt(median(quiet))} ms median`);
  info('  p99 with the meta calls / without', `${fmt(p99(duringAll))} ms / ${fmt(p99(quietAll))} ms`);
}

/** A free key's flood of 2,000 calls of `path` over 50 connections, against another customer's calls, runs times. */
async function flood(url: string, path: string, flooder: string, other: string, runs: number): Promise<void> {
  const aapl = `${url}/v1/scores/AAPL`;
  const quiet: number[] = [];
  const flooded: number[] = [];
  const floodedAll: number[] = [];
  const quietAll: number[] = [];
  const statuses = { ok: 0, limited: 0 };
  for (let i = 0; i < runs; i++) {
    const q = await latencies(aapl, other, 2000);
    quiet.push(median(q));
    quietAll.push(...q);
    const calls = autocannon({ url: `${url}${path}`, connections: 50, amount: 2000, headers: { 'X-API-Key': flooder } });
    const during = latencies(aapl, other, 1500);
    const [f, l] = await Promise.all([calls, during]);
    statuses.ok += f['2xx'];
    statuses.limited += f.non2xx;
    flooded.push(median(l));
    floodedAll.push(...l);
    // The free key's bucket refills between runs.
    await new Promise((r) => setTimeout(r, 2500));
  }
  const q = median(quiet);
  const m = median(flooded);
  report(`another customer's GET /v1/scores/AAPL during a free key's flood of 2,000 GET ${path}`, `${fmt(m)} ms median`, '< 20 ms', m < 20);
  info('  the same with no flood (baseline, same run)', `${fmt(q)} ms median`, `(flood answered ${statuses.ok}, refused ${statuses.limited} over ${runs} runs)`);
  info('  p99 during the flood / without', `${fmt(p99(floodedAll))} ms / ${fmt(p99(quietAll))} ms`);
}
