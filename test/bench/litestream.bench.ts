import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { checkedLitestream, LITESTREAM_RPO_SECONDS } from '../../src/app/backup/litestream.js';
import { loadConfig } from '../../src/app/config.js';
import { projectRoot } from '../../src/core/paths.js';
import { debitRequestIds, lostCalls, meteredLoad } from '../support/metered-load.js';
import { until, type Exit } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { startBenchServer } from './bench-server.js';
import { fmt, info, median, report } from './stats.js';

/** The built CLI (`dist/src/app/cli/bin.js`) as a process. */
function cli(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<Exit> } {
  const child = spawn(process.execPath, ['dist/src/app/cli/bin.js', ...args], { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, done: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }))) };
}

async function cliOk(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const r = await cli(args, env).done;
  if (r.code !== 0) throw new Error(`scores ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** `scores replicate --to replica` until it reports the replica ready: the process and Litestream's pid. */
async function startReplication(replica: string, env: NodeJS.ProcessEnv) {
  const run = cli(['replicate', '--to', replica, '--json'], env);
  let said = '';
  run.child.stdout!.on('data', (d: Buffer) => (said += d.toString()));
  await until(() => said.includes('\n') || run.child.exitCode !== null, 300_000, 100);
  if (run.child.exitCode !== null) throw new Error(`scores replicate exited: ${(await run.done).stderr}`);
  const ready = JSON.parse(said) as { litestream: { pid: number }; ready_seconds: number };
  return { ...run, litestreamPid: ready.litestream.pid, readySeconds: ready.ready_seconds };
}

const ACCOUNT = 'demo-quant';

/** The full demo store (history up to `now`, the demo accounts, the quant account's rate unlimited), built once and copied per measurement. */
async function demoStore(now: string): Promise<string> {
  const dir = tempDir('scores-bench-litestream-');
  const env = testEnv(dir, now);
  const server = await startBenchServer(env);
  await cliOk(['rate-limit', 'set', '--account', ACCOUNT, '--per-second', 'unlimited'], env);
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.on('exit', r));
  return dir;
}

/** autocannon, 50 connections, metered `GET /v1/scores/AAPL`. */
async function throughput(url: string, key: string, seconds: number): Promise<number> {
  const r = await autocannon({ url: `${url}/v1/scores/AAPL`, connections: 50, duration: seconds, headers: { 'X-API-Key': key } });
  if (r.non2xx > 0) throw new Error(`${r.non2xx} non-2xx responses`);
  return r.requests.average;
}

/** Metered throughput without and with Litestream replicating the same server's store, in turns. */
async function replicationCost(template: string, now: string, runs: number): Promise<void> {
  const dir = tempDir('scores-bench-litestream-');
  const replica = tempDir('scores-bench-litestream-replica-');
  cpSync(template, dir, { recursive: true });
  const env = testEnv(dir, now);
  const server = await startBenchServer(env);
  const key = demoKey(dir, 'quant');
  const without: number[] = [];
  const withIt: number[] = [];
  try {
    await throughput(server.url, key, 2);
    for (let i = 0; i < runs; i++) {
      // In turns, so that neither side always has the warmer machine.
      if (i % 2 === 0) without.push(await throughput(server.url, key, 8));
      const replication = await startReplication(replica, env);
      withIt.push(await throughput(server.url, key, 8));
      replication.child.kill('SIGTERM');
      const stopped = await replication.done;
      if (stopped.code !== 0) throw new Error(`scores replicate exited ${stopped.code}: ${stopped.stderr}`);
      if (i % 2 === 1) without.push(await throughput(server.url, key, 8));
      process.stderr.write(`  run ${i + 1}/${runs}: ${fmt(without.at(-1)!, 0)} req/s without Litestream, ${fmt(withIt.at(-1)!, 0)} with (ready in ${fmt(replication.readySeconds)} s)\n`);
    }
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
    rmSync(replica, { recursive: true, force: true });
  }
  const [w, o] = [median(withIt), median(without)];
  info('metered GET /v1/scores/AAPL, no replication', `${fmt(o, 0)} req/s`, '(baseline, same server, same run)');
  report('the same while Litestream replicates the store', `${fmt((w / o) * 100, 0)}% (${fmt(w, 0)} req/s)`, '>= 90% of without', w / o >= 0.9);
}

/**
 * One loss: the server under metered load on 50 connections and Litestream replicating, both
 * killed with -9 at one instant, the data directory deleted, restored, the server started, a call
 * answered. RPO: how long before the loss the oldest acknowledged call missing from the restored
 * ledger was answered (0 when none is missing); RTO: from the loss to that first answered call.
 */
async function oneLoss(template: string, now: string) {
  const dir = tempDir('scores-bench-litestream-');
  const replica = tempDir('scores-bench-litestream-replica-');
  cpSync(template, dir, { recursive: true });
  const env = testEnv(dir, now);
  let server = await startBenchServer(env);
  try {
    const key = demoKey(dir, 'quant');
    const replication = await startReplication(replica, env);
    const load = meteredLoad(server.url, key, 50);
    await new Promise((r) => setTimeout(r, 8_000));
    const loss = Date.now();
    for (const pid of [replication.litestreamPid, server.child.pid!, replication.child.pid!]) process.kill(pid, 'SIGKILL');
    await load.stop();
    rmSync(dir, { recursive: true, force: true });
    const restoreStarted = Date.now();
    const restored = JSON.parse(await cliOk(['replicate', 'restore', '--from', replica, '--json'], env)) as { seconds: number };
    const restoreSeconds = (Date.now() - restoreStarted) / 1000;
    server = await startBenchServer(env);
    const res = await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } });
    if (res.status !== 200) throw new Error(`the first call after the restore answered ${res.status}`);
    const rto = (Date.now() - loss) / 1000;
    const ids = debitRequestIds(await cliOk(['ledger', 'export', '--account', ACCOUNT], env));
    const lost = lostCalls(load.acks, new Set(ids), loss);
    const rpo = lost.length ? Math.max(...lost.map((l) => l.age)) : 0;
    return { rpo, rto, acks: load.acks.length, lost: lost.length, doubled: ids.length - new Set(ids).size, restoreSeconds, verifySeconds: restored.seconds };
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.on('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(replica, { recursive: true, force: true });
  }
}

/** `BENCH_ONLY=litestream`: the continuous backup's RPO and RTO on the full demo store, and what it costs while it runs. */
export async function benchLitestream(runs: number, now: string): Promise<void> {
  try {
    checkedLitestream(loadConfig(process.env));
  } catch (err) {
    process.stdout.write(`SKIP  Litestream: ${(err as Error).message}\n`);
    return;
  }
  const template = await demoStore(now);
  try {
    await replicationCost(template, now, runs);
    const losses = [];
    for (let i = 0; i < runs; i++) {
      const l = await oneLoss(template, now);
      losses.push(l);
      process.stderr.write(
        `  loss ${i + 1}/${runs}: ${l.acks} calls answered, ${l.lost} lost (RPO ${fmt(l.rpo, 2)} s), ${l.doubled} doubled; restore ${fmt(l.restoreSeconds)} s (of which Litestream and the audit ${fmt(l.verifySeconds)} s), RTO ${fmt(l.rto)} s\n`,
      );
    }
    const rpo = median(losses.map((l) => l.rpo));
    const worst = Math.max(...losses.map((l) => l.rpo));
    report(`RPO: oldest lost call's age at the loss, 50 connections (median of ${runs})`, `${fmt(rpo, 2)} s (worst ${fmt(worst, 2)} s)`, `<= ${LITESTREAM_RPO_SECONDS} s (stated)`, worst <= LITESTREAM_RPO_SECONDS);
    report('debits doubled after a restore', `${losses.reduce((n, l) => n + l.doubled, 0)}`, '0', losses.every((l) => l.doubled === 0));
    info(`RTO: loss to first answered call (median of ${runs})`, `${fmt(median(losses.map((l) => l.rto)))} s`, `restore ${fmt(median(losses.map((l) => l.restoreSeconds)))} s of it`);
  } finally {
    rmSync(template, { recursive: true, force: true });
  }
}
