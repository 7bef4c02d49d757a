import autocannon from 'autocannon';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { runCli } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { newBenchKey, startBenchServer } from './bench-server.js';
import { fmt, info, median, report } from './stats.js';

/** A call every `everyMs` for `ms` (40 a second by default, under the caller's own rate limit): each one's latency (ms). */
function latencies(url: string, key: string, ms: number, everyMs = 25): Promise<number[]> {
  const end = performance.now() + ms;
  return latenciesWhile(url, key, () => performance.now() < end, everyMs);
}

/** A call every `everyMs` while `going()`: each one's latency (ms). */
async function latenciesWhile(url: string, key: string, going: () => boolean, everyMs = 25): Promise<number[]> {
  const out: number[] = [];
  while (going()) {
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
 * (`/v1/track-record`, `/v1/meta`), one free key floods the server over 50 connections for 2 s
 * while another customer calls `GET /v1/scores/AAPL` one call after another: that customer's
 * median latency, against the same calls with no flood (same run). The free key's rate limit
 * (10/s, burst 20) serves a few dozen and refuses the rest before any read-model work; the served
 * ones cost a lookup, not a build, so the flood costs the others little. Last, the refused floods
 * and the slow bodies of issue 42 (`refusedAndSlow`).
 */
export async function benchFlood(runs: number): Promise<void> {
  const dir = tempDir('scores-bench-flood-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  const server = await startBenchServer(env);
  try {
    const other = await newBenchKey('builder', env);
    const reader = await newBenchKey('enterprise', env);
    await new Promise((r) => setTimeout(r, 1500));
    await latencies(`${server.url}/v1/scores/AAPL`, other, 500);
    await repeatedMeta(server.url, reader, other, runs);
    await pacedMeta(server.url, await newBenchKey('free', env), other, runs);
    for (const path of ['/v1/track-record', '/v1/meta']) await flood(server.url, path, await newBenchKey('free', env), other, runs);
    await refusedAndSlow(server.url, env, other, runs);
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

/**
 * A free key's flood of `path` over 50 connections for 2 s, against another customer's calls, runs
 * times. For 2 s, not 2,000 calls: a connection refused for its rate is read once a second
 * (src/app/http/client-limits.ts), so 2,000 calls would take 40 s.
 */
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
    const calls = autocannon({ url: `${url}${path}`, connections: 50, duration: 2, headers: { 'X-API-Key': flooder } });
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
  report(`another customer's GET /v1/scores/AAPL during a free key's 2 s flood of GET ${path} (50 connections)`, `${fmt(m)} ms median`, '< 20 ms', m < 20);
  info('  the same with no flood (baseline, same run)', `${fmt(q)} ms median`, `(flood answered ${statuses.ok}, refused ${statuses.limited} over ${runs} runs)`);
  info('  p99 during the flood / without', `${fmt(p99(floodedAll))} ms / ${fmt(p99(quietAll))} ms`);
}

/**
 * Issue 42 item 4, "floods and slow clients are cheap": another customer (builder) calls GET
 * /v1/scores/AAPL every 25 ms with no attack, then during each attack; its median and p99 during
 * the attack against those of the same run with none, target ≤ 1.5× and ≤ 2×. The attacks: one
 * free key (10/s) on 20 connections for 3 s, refused all but its burst (429 `rate_limited`); the
 * same without a key (401, then 429 for the address); 100 sockets sending a webhook registration's
 * body at 1 byte every 5 s, with a quant key (cut by the body rate, HTTP_BODY_MIN_RATE).
 */
async function refusedAndSlow(url: string, env: NodeJS.ProcessEnv, other: string, runs: number): Promise<void> {
  const flooder = await newBenchKey('free', env);
  await beside(url, other, runs, 'a refused flood (one free key, 20 connections, 3 s)', () => refusedFlood(url, flooder));
  await beside(url, other, runs, 'a keyless flood (20 connections, 3 s)', () => refusedFlood(url));
  const quant = await newBenchKey('quant', env);
  const lives: number[] = [];
  await beside(url, other, runs, 'slow bodies (100 sockets, 1 byte per 5 s)', async () => {
    const sockets = await Promise.all(Array.from({ length: 100 }, () => slowPost(url, quant, 5_000)));
    lives.push(...sockets.map((s) => s.ms));
    const statuses = new Map<string, number>();
    for (const s of sockets) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
    return [...statuses].map(([status, n]) => `${status} ×${n}`).join(', ');
  });
  const longest = Math.max(...lives) / 1000;
  // HTTP_BODY_TIMEOUT_MS (10 s) plus a second of slack: the body rate's deadline is exact to the timer.
  report('  the slow sockets’ longest life', `${fmt(longest)} s (median ${fmt(median(lives) / 1000)} s)`, '≤ 11 s', longest <= 11);
}

/** The other customer's calls with no attack for 3 s, then for as long as `attack` lasts, `runs` times: the row and its INFO lines. */
async function beside(url: string, other: string, runs: number, name: string, attack: () => Promise<string>): Promise<void> {
  const aapl = `${url}/v1/scores/AAPL`;
  const quiet: number[] = [];
  const during: number[] = [];
  const told: string[] = [];
  for (let i = 0; i < runs; i++) {
    quiet.push(...(await latencies(aapl, other, 3000)));
    let going = true;
    const [what, l] = await Promise.all([attack().finally(() => (going = false)), latenciesWhile(aapl, other, () => going)]);
    during.push(...l);
    told.push(what);
    // The flooder's bucket refills between runs.
    await new Promise((r) => setTimeout(r, 1500));
  }
  const [qm, qp, dm, dp] = [median(quiet), p99(quiet), median(during), p99(during)];
  report(`another customer's GET /v1/scores/AAPL during ${name}`, `${fmt(dm)} / ${fmt(dp)} ms median / p99`, '≤ 1.5× / ≤ 2× baseline', dm <= 1.5 * qm && dp <= 2 * qp);
  info('  the same with no attack (baseline, same run)', `${fmt(qm)} / ${fmt(qp)} ms median / p99`, `(${fmt(dm / qm, 2)}× / ${fmt(dp / qp, 2)}×; ${quiet.length} and ${during.length} calls)`);
  info('  the attack, run by run', told.join('; '));
}

/** `key`'s (or no key's) calls of GET /v1/scores/AAPL on 20 connections for 3 s, as fast as they are answered. */
async function refusedFlood(url: string, key?: string): Promise<string> {
  const r = await autocannon({ url: `${url}/v1/scores/AAPL`, connections: 20, duration: 3, headers: key ? { 'X-API-Key': key } : {} });
  return `${r.requests.total} calls: ${r['2xx']} answered, ${r.non2xx} refused, ${r.errors} errors`;
}

/**
 * A webhook registration whose body (1,000 bytes announced) comes a byte every `everyMs`, on a
 * connection of its own: how long the connection stayed open and the status it was answered
 * (`none`: closed unanswered). Given up (and said so) after 120 s.
 */
function slowPost(url: string, key: string, everyMs: number): Promise<{ ms: number; status: string }> {
  return new Promise((resolve) => {
    const start = performance.now();
    let received = '';
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(url).port) }, () => {
      socket.write(`POST /v1/webhooks HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    });
    const drip = setInterval(() => socket.write(' '), everyMs);
    const giveUp = setTimeout(() => ((received ||= 'HTTP/1.1 open after 120 s'), socket.destroy()), 120_000);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve({ ms: performance.now() - start, status: /^HTTP\/1\.1 (\d{3}|open after 120 s)/.exec(received)?.[1] ?? 'none' });
    });
  });
}
