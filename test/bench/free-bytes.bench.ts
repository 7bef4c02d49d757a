import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { runCli } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { newBenchKey, startBenchServer } from './bench-server.js';
import { fmt, info, median, report } from './stats.js';

/** Free keys attacking the track record, per run: the three. */
const ATTACKERS = 3;
/** Each attacker's calls in flight: two over REST, two over MCP. */
const LOOPS = 4;
/** Each attacker sends at its own request rate (free: 10/s), so every refusal is the byte budget's. */
const CALL_EVERY_MS = (LOOPS * 1000) / 10;
const QUIET_MS = 5000;
/** The first seconds of an attack, while fresh accounts spend their bursts: reported apart (INFO). */
const BURST_MS = 2000;
/** The sustained attack after it, which the targets are about (the attack was sustained). */
const ATTACK_MS = 8000;

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * The other customer's own connection: another customer does not share the attackers' sockets (the
 * global fetch pool would hand it a socket the server holds back for a second after a refusal).
 */
const customer = new Agent({ keepAlive: true, maxSockets: 1 });

function getStatus(url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: customer, headers: { 'X-API-Key': key } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

/** The other customer: `GET /v1/scores/AAPL` every 25 ms for `ms`; each call's latency (ms). */
async function latencies(url: string, key: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    const status = await getStatus(`${url}/v1/scores/AAPL`, key);
    if (status !== 200) throw new Error(`GET /v1/scores/AAPL answered ${status}`);
    const took = performance.now() - t0;
    out.push(took);
    if (took < 25) await new Promise((r) => setTimeout(r, 25 - took));
  }
  return out;
}

interface Moved {
  bytes: number;
  served: number;
  refused: number;
}

const MCP_CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_track_record', arguments: {} } });

/** One attacker's loop: the track record over REST (no If-None-Match) or MCP, one call every CALL_EVERY_MS, until `end`. */
async function pull(url: string, key: string, mcp: boolean, end: number, moved: Moved): Promise<void> {
  const init: RequestInit = mcp
    ? { method: 'POST', body: MCP_CALL, headers: { 'X-API-Key': key, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18' } }
    : { headers: { 'X-API-Key': key } };
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await fetch(mcp ? `${url}/mcp/http` : `${url}/v1/track-record`, init);
    const text = await r.text();
    // A refusal over MCP is a small tool error; a served result is the whole record.
    const ok = r.status === 200 && !(mcp && text.length < 8192 && text.includes('"isError":true'));
    moved.bytes += Buffer.byteLength(text);
    if (ok) moved.served++;
    else moved.refused++;
    const took = performance.now() - t0;
    if (took < CALL_EVERY_MS) await new Promise((r) => setTimeout(r, CALL_EVERY_MS - took));
  }
}

/** The other customer's latencies with no attack, then during the attackers' bursts and after them; what the attackers moved. */
async function oneRun(url: string, other: string, attackers: string[]): Promise<{ quiet: number[]; burst: number[]; attacked: number[]; moved: Moved }> {
  const quiet = await latencies(url, other, QUIET_MS);
  const moved: Moved = { bytes: 0, served: 0, refused: 0 };
  const end = performance.now() + BURST_MS + ATTACK_MS;
  const loops = attackers.flatMap((key) => Array.from({ length: LOOPS }, (_, i) => pull(url, key, i >= LOOPS / 2, end, moved)));
  const probe = async () => [await latencies(url, other, BURST_MS), await latencies(url, other, ATTACK_MS)] as const;
  const [[burst, attacked]] = await Promise.all([probe(), ...loops]);
  return { quiet, burst, attacked, moved };
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

/** `runs` runs of one server; the figures over every run's calls. */
async function measure(url: string, other: string, keysOfRun: (run: number) => string[], runs: number) {
  const quiet: number[] = [];
  const burst: number[] = [];
  const attacked: number[] = [];
  const moved: Moved = { bytes: 0, served: 0, refused: 0 };
  for (let i = 0; i < runs; i++) {
    const r = await oneRun(url, other, keysOfRun(i));
    quiet.push(...r.quiet);
    burst.push(...r.burst);
    attacked.push(...r.attacked);
    moved.bytes += r.moved.bytes;
    moved.served += r.moved.served;
    moved.refused += r.moved.refused;
  }
  return { quiet, burst, attacked, moved, mbPerSecond: moved.bytes / 1e6 / (((BURST_MS + ATTACK_MS) / 1000) * runs) };
}

/**
 * Issue 42 item 5: three free keys pull the track record (about 1 MB as JSON over the full
 * history) at their request rate, half over REST without If-None-Match, half over MCP, while
 * another customer (builder) calls `GET /v1/scores/AAPL` every 25 ms: that customer's median and
 * p99 during the sustained attack against the same calls with no attack, in the same run. Fresh
 * free accounts each run, so each attack starts with full budgets: its first BURST_MS, while they
 * spend them, are reported apart (INFO). INFO too: the same attack with
 * FREE_ANSWER_BYTES_PER_SECOND=off, the server restarted on the same data, as before the budget.
 */
export async function benchFreeBytes(runs: number, now: string): Promise<void> {
  const dir = tempDir('scores-bench-free-bytes-');
  const env = testEnv(dir, now, { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  try {
    const other = await newBenchKey('builder', env);
    const free: string[] = [];
    for (let i = 0; i < ATTACKERS * runs; i++) free.push(await newBenchKey('free', env));
    let server = await startBenchServer(env);
    await new Promise((r) => setTimeout(r, 1500));
    await latencies(server.url, other, 500);
    const on = await measure(server.url, other, (run) => free.slice(run * ATTACKERS, (run + 1) * ATTACKERS), runs);
    await stop(server.child);
    server = await startBenchServer({ ...env, FREE_ANSWER_BYTES_PER_SECOND: 'off' });
    await latencies(server.url, other, 500);
    const off = await measure(server.url, other, () => free.slice(0, ATTACKERS), runs);
    await stop(server.child);
    const [mq, ma, pq, pa] = [median(on.quiet), median(on.attacked), p99(on.quiet), p99(on.attacked)];
    report("another customer's median during 3 free keys' track-record pulls", `${fmt(ma)} ms vs ${fmt(mq)} ms (${fmt(ma / mq, 2)}×)`, '≤ 1.5× no attack', ma <= 1.5 * mq);
    report('  its p99', `${fmt(pa)} ms vs ${fmt(pq)} ms (${fmt(pa / pq, 2)}×)`, '≤ 2× no attack', pa <= 2 * pq);
    info('  its median, p99 in the first 2 s (the bursts)', `${fmt(median(on.burst))} ms, ${fmt(p99(on.burst))} ms`);
    info('  the free keys moved', `${fmt(on.mbPerSecond, 2)} MB/s`, `(${on.moved.served} answered, ${on.moved.refused} refused over ${runs} runs)`);
    const offAll = [...off.burst, ...off.attacked];
    info('  with the budget off: median, p99', `${fmt(median(offAll))} ms, ${fmt(p99(offAll))} ms`, `(no attack ${fmt(median(off.quiet))} ms, ${fmt(p99(off.quiet))} ms)`);
    info('  with the budget off: the free keys moved', `${fmt(off.mbPerSecond, 2)} MB/s`, `(${off.moved.served} answered, ${off.moved.refused} refused)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
