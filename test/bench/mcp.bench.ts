import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { projectRoot } from '../../src/core/paths.js';
import { runCli, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { fmt, info, median, report } from './stats.js';

function start(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['dist/src/app/main.js'], { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  // The start banner is on stderr (stdout is the JSON log stream).
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const pattern = /listening on http:\/\/localhost:(\d+)/;
  return until(() => pattern.test(out), 120_000).then(() => ({ child, port: Number(pattern.exec(out)![1]) }));
}

interface Load {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

async function load(l: Load, seconds: number) {
  const r = await autocannon({ url: l.url, method: l.method, headers: l.headers, body: l.body, connections: 50, duration: seconds });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${l.method} ${l.url}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  return { rps: r.requests.average, p99: r.latency.p99 };
}

/**
 * `tools/call get_scores` for AAPL over the hosted MCP endpoint (POST /mcp/http) against its REST
 * twin `GET /v1/scores/AAPL`, the same quant demo key, the same server process, 50 connections
 * each, alternating in the same run. Both are metered: every call's debit is durable before its
 * response. The MCP request is what a client sends after `initialize` (stateless server: no
 * session): the Accept header the streamable HTTP transport requires and the protocol version.
 */
export async function benchMcp(runs: number, seconds = 8): Promise<void> {
  const dir = tempDir('scores-bench-mcp-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  const server = await start(env);
  // Demo keys are random: the server wrote them to its data directory.
  const key = demoKey(dir, 'quant');
  const rest: Load = { method: 'GET', url: `http://127.0.0.1:${server.port}/v1/scores/AAPL`, headers: { 'X-API-Key': key } };
  const mcp: Load = {
    method: 'POST',
    url: `http://127.0.0.1:${server.port}/mcp/http`,
    headers: {
      'X-API-Key': key,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_scores', arguments: { ticker: 'AAPL' } } }),
  };
  /** The tool's result must be the REST body (a refusal would be a 200 too: `isError`). */
  const sameAnswer = async () => {
    const r = await fetch(rest.url, { headers: rest.headers });
    const m = await fetch(mcp.url, { method: 'POST', headers: mcp.headers, body: mcp.body });
    const a: unknown = await r.json();
    const b = (await m.json()) as { result?: { isError?: boolean; structuredContent?: unknown } };
    if (r.status !== 200 || m.status !== 200 || b.result?.isError || JSON.stringify(b.result?.structuredContent) !== JSON.stringify(a)) {
      throw new Error(`MCP and REST answers differ:\n${JSON.stringify(a)}\n${JSON.stringify(b)}`);
    }
    return r.headers;
  };
  try {
    // A server with request-rate limits: raise the key's far above what this load reaches.
    if ((await sameAnswer()).has('ratelimit-policy')) {
      const limit = await runCli(['rate-limit', 'set', '--account', 'demo-quant', '--per-second', '1000000'], env);
      if (limit.code !== 0) throw new Error(limit.stderr);
      await new Promise((r) => setTimeout(r, 1500));
    }
    // Warm-up.
    await load(rest, 2);
    await load(mcp, 2);
    const r: { rps: number; p99: number }[] = [];
    const m: { rps: number; p99: number }[] = [];
    for (let i = 0; i < runs; i++) {
      r.push(await load(rest, seconds));
      m.push(await load(mcp, seconds));
    }
    await sameAnswer();
    const [rr, mr] = [r, m].map((xs) => median(xs.map((x) => x.rps))) as [number, number];
    const [rp, mp] = [r, m].map((xs) => median(xs.map((x) => x.p99))) as [number, number];
    report('REST GET /v1/scores/AAPL (metered)', `${fmt(rr, 0)} req/s, p99 ${fmt(rp, 0)} ms`, '(baseline)', true);
    report('MCP tools/call get_scores AAPL (metered)', `${fmt(mr, 0)} req/s, p99 ${fmt(mp, 0)} ms`, '', true);
    report('MCP / REST throughput', `${fmt((mr / rr) * 100, 0)}%`, '>= 50%', mr / rr >= 0.5);
    info('MCP / REST p99 latency', `${fmt(mp / Math.max(rp, 1), 2)}x`, '(no target)');
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((res) => setTimeout(res, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A call every 25 ms for `ms`: each one's latency (ms); any answer but 200 fails the bench. */
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
    if (took < 25) await new Promise((res) => setTimeout(res, 25 - took));
  }
  return out;
}

/** POSTs `body` to the MCP endpoint again and again until `until`; how many calls were served and refused. */
async function attack(url: string, key: string, body: string, until: number, tally: { posts: number; served: number; refused: number }): Promise<void> {
  const headers = { 'X-API-Key': key, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  while (performance.now() < until) {
    const r = await fetch(url, { method: 'POST', headers, body });
    const answer = (await r.json());
    tally.posts++;
    for (const a of Array.isArray(answer) ? (answer as { result?: { isError?: boolean } }[]) : []) {
      if (a.result && !a.result.isError) tally.served++;
      else tally.refused++;
    }
    // A POST refused whole (429, or 400 for a batch over 10): the attacker sends the next at once.
  }
}

/** GETs `url` again and again until `until` (the REST control of `attack`). */
async function restAttack(url: string, key: string, until: number): Promise<void> {
  while (performance.now() < until) await (await fetch(url, { headers: { 'X-API-Key': key } })).arrayBuffer();
}

/**
 * Issue 28: one MCP POST held a batch of 100 `get_track_record` calls for one rate-limit token.
 * Five free keys each send POSTs of 60 `get_track_record` calls back to back (refused whole: a
 * batch holds at most 10), then POSTs of 10 (the most a batch may hold: each call takes its own
 * token, so each key is served its rate), while another customer calls `GET /v1/scores/AAPL` one
 * call after another: that customer's median latency in each case, and with no attack (same run).
 */
export async function benchMcpBatchFlood(runs: number, ms = 2000): Promise<void> {
  const dir = tempDir('scores-bench-mcp-batch-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const seeded = await runCli(['seed', '--json'], env);
  if (seeded.code !== 0) throw new Error(seeded.stderr);
  const server = await start(env);
  try {
    const newKey = async (tier: string) => {
      const r = await runCli(['keys', 'create', '--tier', tier, '--json'], env);
      if (r.code !== 0) throw new Error(r.stderr);
      return (JSON.parse(r.stdout) as { key: string }).key;
    };
    const attackers = [await newKey('free'), await newKey('free'), await newKey('free'), await newKey('free'), await newKey('free')];
    const other = await newKey('builder');
    await new Promise((r) => setTimeout(r, 1500));
    const base = `http://127.0.0.1:${server.port}`;
    const aapl = `${base}/v1/scores/AAPL`;
    const batch = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'get_track_record', arguments: {} } })));
    await latencies(aapl, other, 500);
    const figures = { quiet: [] as number[], sixty: [] as number[], ten: [] as number[], rest: [] as number[] };
    const tallies = { sixty: { posts: 0, served: 0, refused: 0 }, ten: { posts: 0, served: 0, refused: 0 } };
    for (let i = 0; i < runs; i++) {
      figures.quiet.push(median(await latencies(aapl, other, ms)));
      for (const [name, size] of [['sixty', 60], ['ten', 10]] as const) {
        const until = performance.now() + ms;
        const during = latencies(aapl, other, ms);
        await Promise.all(attackers.map((k) => attack(`${base}/mcp/http`, k, batch(size), until, tallies[name])));
        figures[name].push(median(await during));
        // The free keys' buckets refill between attacks.
        await new Promise((r) => setTimeout(r, 2500));
      }
      // The control: the same five keys' back-to-back GET /v1/track-record over REST.
      const until = performance.now() + ms;
      const during = latencies(aapl, other, ms);
      await Promise.all(attackers.map((k) => restAttack(`${base}/v1/track-record`, k, until)));
      figures.rest.push(median(await during));
      await new Promise((r) => setTimeout(r, 2500));
    }
    const [q, sixty, ten] = [median(figures.quiet), median(figures.sixty), median(figures.ten)];
    const t = tallies;
    report("another customer's GET /v1/scores/AAPL while five free keys POST 60-call MCP batches", `${fmt(sixty)} ms median`, '< 50 ms', sixty < 50);
    info('  the POSTs', `${t.sixty.posts} POSTs`, `(${t.sixty.served} calls served, ${t.sixty.refused} refused; every POST refused whole)`);
    report("  the same while they POST 10-call batches (the most one holds)", `${fmt(ten)} ms median`, '< 50 ms', ten < 50);
    info('  the POSTs', `${t.ten.posts} POSTs`, `(${t.ten.served} calls served, ${t.ten.refused} refused rate_limited, over ${runs} runs)`);
    info('  the same during the same keys\' REST GET /v1/track-record loop', `${fmt(median(figures.rest))} ms median`, '(control: the load of as many plain requests)');
    info('  the same with no attack (baseline, same run)', `${fmt(q)} ms median`);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((res) => setTimeout(res, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}
