/**
 * What one metered call costs in a fleet, by process (docs/scaling.md, "Capacity, measured"): a fleet
 * of one API process and one worker on PostgreSQL + Kafka, 50 connections of `GET /v1/scores/AAPL`
 * for 10 s, the CPU of the API process, the worker and the database's PostgreSQL backends read from
 * `/proc` before and after, and the database's commits. Run with the engines' variables set:
 * `npm run build && npx tsx test/bench/fleet-cpu.ts`.
 */
import autocannon from 'autocannon';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pgSession, type PgSession } from '../../infra/postgresql/database.js';
import { startFleet } from '../../src/app/fleet/fleet.js';
import { projectRoot } from '../../src/core/paths.js';
import { openEnginesSandbox } from '../support/engines-sandbox.js';
import { runCli } from '../support/processes.js';

const NOW = '2019-03-29T12:00:00Z';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) a process has used, threads included. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The fleet's nginx front: its master (started with `-p <tmp>/scores-front-…`) and worker processes; none with the in-process front. */
function nginxFrontPids(): number[] {
  const masters = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      return cmd.includes('nginx') && cmd.includes('scores-front-');
    } catch {
      return false;
    }
  });
  return masters.flatMap((m) => [Number(m), ...readFileSync(`/proc/${m}/task/${m}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)]);
}

async function postgresCpu(admin: PgSession): Promise<number> {
  const backends = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
  let sum = 0;
  for (const { pid } of backends) {
    try {
      sum += cpuOf(pid);
    } catch {
      // a backend gone meanwhile
    }
  }
  return sum;
}

const sandbox = await openEnginesSandbox('fleetcpu', NOW, { kafka: true, extra: { PUBLIC_BASE_URL: 'http://localhost' } });
process.argv[1] = join(projectRoot(), 'dist/src/app/cli/bin.js');
const fleet = await startFleet({ apis: 1, workers: 1, port: 0, host: '127.0.0.1', env: sandbox.env });
const admin = await pgSession(sandbox.vars['POSTGRES_URL']!);
try {
  const env = sandbox.env as Record<string, string>;
  const { account_id, key } = JSON.parse((await runCli(['keys', 'create', '--tier', 'quant', '--json'], env)).stdout) as { account_id: string; key: string };
  await runCli(['rate-limit', 'set', '--account', account_id, '--per-second', '1000000'], env);
  await sleep(3000);
  const url = `${fleet.url}/v1/scores/AAPL`;
  await autocannon({ url, connections: 20, duration: 3, headers: { 'X-API-Key': key } }); // warm-up
  await sleep(2000);
  const api = fleet.processes.find((p) => p.role === 'api')!.pid;
  const worker = fleet.processes.find((p) => p.role === 'worker')!.pid;
  const commits = async () => Number((await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()'))[0]!.n);
  const frontCpu = () => nginxFrontPids().reduce((sum, pid) => sum + cpuOf(pid), 0) + (nginxFrontPids().length ? 0 : cpuOf(process.pid));
  const before = { api: cpuOf(api), worker: cpuOf(worker), pg: await postgresCpu(admin), front: frontCpu(), commits: await commits() };
  const run = await autocannon({ url, connections: 50, duration: 10, headers: { 'X-API-Key': key } });
  await sleep(3000); // the worker projects the last debits
  const after = { api: cpuOf(api), worker: cpuOf(worker), pg: await postgresCpu(admin), front: frontCpu(), commits: await commits() };
  const calls = run.requests.total;
  const perCall = (seconds: number) => `${((seconds / calls) * 1e6).toFixed(0)} µs`;
  process.stdout.write(
    `${JSON.stringify({
      calls,
      non2xx: run.non2xx,
      req_per_s: run.requests.average,
      p99_ms: run.latency.p99,
      api_cpu_per_call: perCall(after.api - before.api),
      worker_cpu_per_call: perCall(after.worker - before.worker),
      postgres_cpu_per_call: perCall(after.pg - before.pg),
      // nginx's processes; with the in-process front, this process (the load generator's too).
      front: nginxFrontPids().length ? 'nginx' : 'in-process (with the load generator)',
      front_cpu_per_call: perCall(after.front - before.front),
      postgres_commits_per_call: ((after.commits - before.commits) / calls).toFixed(2),
    })}\n`,
  );
} finally {
  await admin.end();
  await fleet.stop();
  await sandbox.drop();
}
process.exit(0);
