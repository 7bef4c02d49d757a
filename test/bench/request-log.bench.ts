import { cpSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteRequestLog, REQUEST_LOG_FILE } from '../../infra/sqlite/request-log.js';
import { runCli } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { load, start } from './http.bench.js';
import { fmt, info, median, report } from './stats.js';

/** A served copy of the seeded store, with the request log on or off. */
interface Twin {
  dir: string;
  url: string;
  key: Record<string, string>;
  stop(): Promise<void>;
}

async function startTwin(dir: string, now: string, requestLog: 'on' | 'off'): Promise<Twin> {
  const env = testEnv(dir, now, { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent', REQUEST_LOG: requestLog });
  const server = await start(['dist/src/app/main.js'], env, /listening on http:\/\/localhost:(\d+)/);
  // The rate limit stays on (every call checked) at a rate this load never reaches.
  const limit = await runCli(['rate-limit', 'set', '--account', 'demo-quant', '--per-second', '1000000'], env);
  if (limit.code !== 0) throw new Error(limit.stderr);
  return {
    dir,
    url: `http://127.0.0.1:${server.port}/v1/scores/AAPL`,
    key: { 'X-API-Key': demoKey(dir, 'quant') },
    async stop() {
      const exited = new Promise((r) => server.child.once('exit', r));
      server.child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * What the request log costs the metered path, and its storage: two servers on copies of one
 * seeded store, one recording every call (REQUEST_LOG=on, the default) and one not, loaded in
 * adjacent windows (autocannon, 50 connections, metered `GET /v1/scores/AAPL`, which goes first
 * alternating), the median of each pair's ratio: the machine is shared, and a pair's two windows
 * share most of its drift. Then the recording server stops gracefully (its buffer written) and its
 * request-log file (`request-log.sqlite`, WAL folded in) is divided by the calls it holds.
 */
export async function benchRequestLog(runs: number, now: string, seconds = 5): Promise<void> {
  const seeded = tempDir('scores-bench-requestlog-');
  const copy = tempDir('scores-bench-requestlog-off-');
  try {
    const build = await runCli(['seed', '--json'], testEnv(seeded, now, { LOG_LEVEL: 'silent' }));
    if (build.code !== 0) throw new Error(build.stderr);
    cpSync(seeded, copy, { recursive: true });
    const on = await startTwin(seeded, now, 'on');
    const off = await startTwin(copy, now, 'off');
    await new Promise((r) => setTimeout(r, 1500));
    const figures: { rps: number; p99: number }[][] = [[], []];
    let warmUp = 0;
    try {
      for (const t of [on, off]) {
        const w = await load(t.url, t.key, 3);
        if (t === on) warmUp = w.rps * 3;
      }
      const pairs = Math.max(10, runs * 3);
      for (let i = 0; i < pairs; i++) {
        for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) figures[k]!.push(await load([on, off][k]!.url, [on, off][k]!.key, seconds));
      }
    } finally {
      await on.stop();
      await off.stop();
    }
    const [a, b] = figures.map((f) => ({ rps: median(f.map((x) => x.rps)), p99: median(f.map((x) => x.p99)) })) as [{ rps: number; p99: number }, { rps: number; p99: number }];
    const ratio = median(figures[0]!.map((x, i) => x.rps / figures[1]![i]!.rps));
    info('metered GET, request log off', `${fmt(b.rps, 0)} req/s, p99 ${fmt(b.p99, 0)} ms`, `(baseline, same run; median of ${figures[1]!.length} windows of ${seconds} s)`);
    info('metered GET, request log on', `${fmt(a.rps, 0)} req/s, p99 ${fmt(a.p99, 0)} ms`, '(every call recorded)');
    report('request log: metered throughput kept', `${fmt(ratio * 100, 0)}%`, '>= 95% of without', ratio >= 0.95);
    await storageCost(seeded, warmUp + figures[0]!.reduce((n, x) => n + x.rps * seconds, 0));
  } finally {
    rmSync(seeded, { recursive: true, force: true });
    rmSync(copy, { recursive: true, force: true });
  }
}

/** Bytes per call of the recording server's request-log file, and whether it holds every call the load made. */
async function storageCost(dir: string, loaded: number): Promise<void> {
  const file = join(dir, REQUEST_LOG_FILE);
  const store = new SqliteRequestLog(file);
  const { rows } = await store.size();
  await store.close();
  const bytes = statSync(file).size;
  info('request log: calls recorded', `${fmt(rows, 0)}`, `(about ${fmt(loaded, 0)} made: req/s times seconds of each window)`);
  info('request log: bytes per call', `${fmt(bytes / rows, 0)} B`, `(${REQUEST_LOG_FILE}, ${fmt(bytes / 1024 / 1024, 1)} MiB, WAL folded in)`);
}
