import autocannon from 'autocannon';
import { readFileSync, rmSync } from 'node:fs';
import { runCli, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { load, start } from './http.bench.js';
import { fmt, info, median, report } from './stats.js';

/** CPU seconds a process has used (user + system), from /proc: what a call costs the server whatever else runs on the machine. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  // utime and stime are the 14th and 15th fields of the line (12th and 13th after the command's name), in clock ticks of 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One turn of load: requests a second (all answered 2xx), and the server's CPU milliseconds per request. */
async function turn(url: string, headers: Record<string, string>, seconds: number, pid: number): Promise<{ rps: number; cpuMs: number }> {
  const cpu = cpuSeconds(pid);
  const r = await autocannon({ url, connections: 50, duration: seconds, headers });
  if (r.non2xx > 0) throw new Error(`${url}: ${r.non2xx} non-2xx responses`);
  return { rps: r.requests.average, cpuMs: ((cpuSeconds(pid) - cpu) * 1000) / Math.max(1, r.requests.total) };
}

/** A key of `account` with every limit on (never reached in a run), made by the CLI: its key. */
async function limitedKey(env: NodeJS.ProcessEnv, account: string): Promise<string> {
  const expires = new Date(Date.now() + 365 * 86_400_000).toISOString();
  const made = await runCli(
    ['keys', 'create', '--account', account, '--name', 'bench-limited', '--daily-limit', '1000000000', '--monthly-limit', '1000000000', '--expires-at', expires, '--read-only', '--operations', 'scores', '--json'],
    env,
  );
  if (made.code !== 0) throw new Error(made.stderr);
  return (JSON.parse(made.stdout) as { key: string }).key;
}

/**
 * Issue 46: what per-key limits cost a metered call. GET /v1/scores/AAPL (a durable debit each) at
 * 50 connections on one server, with two keys of one account taking turns, pair after pair: the
 * demo's key without limits, and a key with every limit on (credits a day and a month, an expiry,
 * read-only, one operation; never reached): its expiry and restriction checked at each call, its
 * budget in each debit's decision, `X-Key-Budget-Remaining` on each answer.
 */
export async function benchKeyLimits(runs: number, seconds = 4): Promise<void> {
  const pairs = Math.max(3, runs) * 3;
  const dir = tempDir('scores-bench-keylimits-');
  const env = testEnv(dir, '2019-06-14T12:00:00Z', { PUBLIC_BASE_URL: 'http://localhost', LOG_LEVEL: 'silent' });
  const build = await runCli(['seed', '--json'], env);
  if (build.code !== 0) throw new Error(build.stderr);
  const server = await start(['dist/src/app/main.js'], env, /listening on http:\/\/localhost:(\d+)/);
  try {
    const limit = await runCli(['rate-limit', 'set', '--account', 'demo-quant', '--per-second', '1000000'], env);
    if (limit.code !== 0) throw new Error(limit.stderr);
    const url = `http://127.0.0.1:${server.port}/v1/scores/AAPL`;
    const off = { 'X-API-Key': demoKey(dir, 'quant') };
    const on = { 'X-API-Key': await limitedKey(env, 'demo-quant') };
    // The server has the key (and the rate) once its read models do; the limited key's answers carry its budget.
    await until(async () => (await fetch(url, { headers: on })).headers.has('x-key-budget-remaining'), 30_000, 100);
    await new Promise((r) => setTimeout(r, 1500));
    await load(url, off, 2);
    await load(url, on, 2);
    // Many short turns, alternating which key goes first: on a shared machine the load drifts
    // within seconds, and each pair's ratio (the median of them reported) sees the same drift twice.
    const without: { rps: number; cpuMs: number }[] = [];
    const withLimits: { rps: number; cpuMs: number }[] = [];
    for (let i = 0; i < pairs; i++) {
      const first = i % 2 === 0 ? off : on;
      const a = await turn(url, first, seconds, server.child.pid!);
      const b = await turn(url, first === off ? on : off, seconds, server.child.pid!);
      without.push(first === off ? a : b);
      withLimits.push(first === off ? b : a);
    }
    const ratio = median(withLimits.map((l, i) => l.rps / without[i]!.rps));
    const cpu = median(withLimits.map((l, i) => without[i]!.cpuMs / l.cpuMs));
    const ms = (xs: { cpuMs: number }[]) => fmt(median(xs.map((x) => x.cpuMs)), 3);
    report('metered GET /v1/scores/AAPL, key without limits', `${fmt(median(without.map((x) => x.rps)), 0)} req/s, ${ms(without)} ms CPU`, '(baseline, same run)', true);
    report('metered GET /v1/scores/AAPL, key with limits', `${fmt(median(withLimits.map((x) => x.rps)), 0)} req/s, ${ms(withLimits)} ms CPU`, '', true);
    report(`key limits on / off throughput (median of ${pairs} pairs)`, `${fmt(ratio * 100, 0)}%`, '>= 90%', ratio >= 0.9);
    info('key limits on / off, by server CPU per call', `${fmt(cpu * 100, 0)}%`, '(off CPU / on CPU: the throughput a saturated server would keep)');
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}
