import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { projectRoot } from '../../src/core/paths.js';
import { SOURCE_STATEMENT } from '../../src/http/provenance.js';
import { runCli, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { fmt, median, report } from './stats.js';

function start(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  // `pattern` captures the port in its first group.
  return until(() => pattern.test(out), 120_000).then(() => ({ child, port: Number(pattern.exec(out)![1]) }));
}

async function load(url: string, headers: Record<string, string>, seconds: number) {
  const r = await autocannon({ url, connections: 50, duration: seconds, headers });
  if (r.non2xx > 0) throw new Error(`${url}: ${r.non2xx} non-2xx responses`);
  return { rps: r.requests.average, p99: r.latency.p99 };
}

/**
 * GET /v1/scores/{ticker} with a metered key (every debit durable before the response) against a
 * bare express + better-sqlite3 server returning the same JSON, 50 connections, same run.
 */
export async function benchHttp(runs: number, seconds = 8): Promise<void> {
  const dir = tempDir('scores-bench-http-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const build = await runCli(['seed', '--json'], env);
  if (build.code !== 0) throw new Error(build.stderr);
  const metered = await start(['dist/src/main.js'], env, /listening on http:\/\/localhost:(\d+)/);
  const bare = await start(['dist/infra/bench/bare-server.js'], { ...env, BENCH_SOURCE: SOURCE_STATEMENT }, /listening on (\d+)/);
  try {
    const a = await (await fetch(`http://127.0.0.1:${metered.port}/v1/scores/AAPL`, { headers: { 'X-API-Key': demoKey('quant') } })).json();
    const b = await (await fetch(`http://127.0.0.1:${bare.port}/v1/scores/AAPL`)).json();
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`bodies differ:\n${JSON.stringify(a)}\n${JSON.stringify(b)}`);
    const m: { rps: number; p99: number }[] = [];
    const s: { rps: number; p99: number }[] = [];
    await load(`http://127.0.0.1:${bare.port}/v1/scores/AAPL`, {}, 2); // warm-up
    await load(`http://127.0.0.1:${metered.port}/v1/scores/AAPL`, { 'X-API-Key': demoKey('quant') }, 2);
    for (let i = 0; i < runs; i++) {
      s.push(await load(`http://127.0.0.1:${bare.port}/v1/scores/AAPL`, {}, seconds));
      m.push(await load(`http://127.0.0.1:${metered.port}/v1/scores/AAPL`, { 'X-API-Key': demoKey('quant') }, seconds));
    }
    const mr = median(m.map((x) => x.rps));
    const sr = median(s.map((x) => x.rps));
    const mp = median(m.map((x) => x.p99));
    const sp = median(s.map((x) => x.p99));
    report('bare express+sqlite GET /v1/scores/AAPL', `${fmt(sr, 0)} req/s, p99 ${fmt(sp, 0)} ms`, '(baseline)', true);
    report('metered GET /v1/scores/AAPL (durable debit)', `${fmt(mr, 0)} req/s, p99 ${fmt(mp, 0)} ms`, '', true);
    report('metered / bare throughput', `${fmt((mr / sr) * 100, 0)}%`, '>= 80%', mr / sr >= 0.8);
    report('metered / bare p99 latency', `${fmt(mp / Math.max(sp, 1), 2)}x`, '<= 2x', mp / Math.max(sp, 1) <= 2);
  } finally {
    metered.child.kill('SIGTERM');
    bare.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}
