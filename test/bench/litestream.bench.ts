import autocannon from 'autocannon';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { checkedLitestream, LITESTREAM_RPO_SECONDS } from '../../src/app/backup/litestream.js';
import { loadConfig } from '../../src/app/config.js';
import { ledgerDebits, lossReport, meteredLoad } from '../support/restore-drill.js';
import { runCli, spawnCli, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { startBenchServer } from './bench-server.js';
import { fmt, info, median, report } from './stats.js';

/** The built CLI's output, or its failure. */
async function cliOk(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(args, env, { built: true });
  if (r.code !== 0) throw new Error(`scores ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** `scores replicate --to replica` until it reports the replica ready: the process and Litestream's pid. */
async function startReplication(replica: string, env: NodeJS.ProcessEnv) {
  const run = spawnCli(['replicate', '--to', replica, '--json'], env, { built: true });
  let said = '';
  run.child.stdout!.on('data', (d: Buffer) => (said += d.toString()));
  await until(() => said.includes('\n') || run.child.exitCode !== null, 300_000, 100);
  if (run.child.exitCode !== null) throw new Error(`scores replicate exited: ${(await run.done).stderr}`);
  const ready = JSON.parse(said) as { litestream: { pid: number; socket: string }; ready_seconds: number };
  return { ...run, litestreamPid: ready.litestream.pid, socket: ready.litestream.socket, readySeconds: ready.ready_seconds };
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

/** CPU seconds (user + system) a process has used, threads included (Linux: /proc). */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Waits until a process uses less than a tenth of a core over two seconds (at most a minute). */
async function quiet(pid: number): Promise<void> {
  for (let i = 0; i < 30; i++) {
    const before = cpuOf(pid);
    await new Promise((r) => setTimeout(r, 2000));
    if (cpuOf(pid) - before < 0.2) return;
  }
}

/**
 * Metered throughput of two servers on two copies of the full demo store, one of them replicated
 * by Litestream for the whole measurement (started, its replica ready, its first work done), in
 * turns within each run, 15 s each; and the CPU Litestream used during its server's turns beside
 * that server's. (Stopping and restarting Litestream for each turn measured its restarts instead,
 * each rewriting the replica's full-size files; pausing it left its read transaction open, so the
 * turns without it grew a WAL nothing could reset.)
 */
async function replicationCost(template: string, now: string, runs: number): Promise<void> {
  const dirs = [tempDir('scores-bench-litestream-'), tempDir('scores-bench-litestream-')] as const;
  const replica = tempDir('scores-bench-litestream-replica-');
  for (const dir of dirs) cpSync(template, dir, { recursive: true });
  const plain = await startBenchServer(testEnv(dirs[0], now));
  const replicated = await startBenchServer(testEnv(dirs[1], now));
  const replication = await startReplication(replica, testEnv(dirs[1], now));
  const key = [demoKey(dirs[0], 'quant'), demoKey(dirs[1], 'quant')] as const;
  const without: number[] = [];
  const withIt: number[] = [];
  const cpu = { litestream: 0, server: 0 };
  try {
    await throughput(plain.url, key[0], 2);
    await throughput(replicated.url, key[1], 2);
    await quiet(replication.litestreamPid);
    const measureWith = async () => {
      const before = { litestream: cpuOf(replication.litestreamPid), server: cpuOf(replicated.child.pid!) };
      withIt.push(await throughput(replicated.url, key[1], 15));
      cpu.litestream += cpuOf(replication.litestreamPid) - before.litestream;
      cpu.server += cpuOf(replicated.child.pid!) - before.server;
    };
    const measureWithout = async () => void without.push(await throughput(plain.url, key[0], 15));
    for (let i = 0; i < runs; i++) {
      // In turns, so that neither side always has the warmer machine.
      for (const measure of i % 2 === 0 ? [measureWithout, measureWith] : [measureWith, measureWithout]) await measure();
      process.stderr.write(`  run ${i + 1}/${runs}: ${fmt(without.at(-1)!, 0)} req/s without Litestream, ${fmt(withIt.at(-1)!, 0)} with\n`);
    }
  } finally {
    replication.child.kill('SIGTERM');
    await replication.done;
    for (const server of [plain, replicated]) {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.on('exit', r));
    }
    for (const dir of [...dirs, replica]) rmSync(dir, { recursive: true, force: true });
  }
  // Each run's pair was measured back to back: the median of their ratios, on a machine whose load drifts.
  const ratio = median(withIt.map((w, i) => w / without[i]!));
  info('metered GET /v1/scores/AAPL, no replication', `${fmt(median(without), 0)} req/s`, `(baseline: a twin server, same run; runs ${without.map((x) => fmt(x, 0)).join(', ')})`);
  report('the same while Litestream replicates the store', `${fmt(ratio * 100, 0)}% (${fmt(median(withIt), 0)} req/s)`, '>= 90% of without', ratio >= 0.9);
  info("Litestream's CPU while it replicates", `${fmt(cpu.litestream / (15 * runs), 3)} core-s/s`, `${fmt((cpu.litestream / cpu.server) * 100, 1)}% of its server's meanwhile`);
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
    const load = meteredLoad(server.url, [{ account: ACCOUNT, key, connections: 50 }], ['/v1/scores/AAPL']);
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
    const report = lossReport(load.acknowledged, await ledgerDebits([ACCOUNT], env, true), loss);
    const rpo = report.lost.length ? report.lost[0]!.age / 1000 : 0;
    return { rpo, rto, acks: load.acknowledged.length, lost: report.lost.length, doubled: report.doubled.length, restoreSeconds, verifySeconds: restored.seconds };
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.on('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(replica, { recursive: true, force: true });
  }
}

/** The RTO's baseline: the same kill -9 under load with the disk intact, to the restarted server's first answered call. */
async function restartOnly(template: string, now: string): Promise<number> {
  const dir = tempDir('scores-bench-litestream-');
  cpSync(template, dir, { recursive: true });
  const env = testEnv(dir, now);
  let server = await startBenchServer(env);
  try {
    const key = demoKey(dir, 'quant');
    const load = meteredLoad(server.url, [{ account: ACCOUNT, key, connections: 50 }], ['/v1/scores/AAPL']);
    await new Promise((r) => setTimeout(r, 8_000));
    const killed = Date.now();
    server.child.kill('SIGKILL');
    await load.stop();
    server = await startBenchServer(env);
    const res = await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } });
    if (res.status !== 200) throw new Error(`the first call after the restart answered ${res.status}`);
    return (Date.now() - killed) / 1000;
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.on('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
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
    const restarts: number[] = [];
    for (let i = 0; i < runs; i++) {
      restarts.push(await restartOnly(template, now));
      const l = await oneLoss(template, now);
      losses.push(l);
      process.stderr.write(
        `  loss ${i + 1}/${runs}: (a restart with the disk intact: ${fmt(restarts[i]!)} s) ${l.acks} calls answered, ${l.lost} lost (RPO ${fmt(l.rpo, 2)} s), ${l.doubled} doubled; restore ${fmt(l.restoreSeconds)} s (of which Litestream and the audit ${fmt(l.verifySeconds)} s), RTO ${fmt(l.rto)} s\n`,
      );
    }
    const rpo = median(losses.map((l) => l.rpo));
    const worst = Math.max(...losses.map((l) => l.rpo));
    report(`RPO: oldest lost call's age at the loss, 50 connections (median of ${runs})`, `${fmt(rpo, 2)} s (worst ${fmt(worst, 2)} s)`, `<= ${LITESTREAM_RPO_SECONDS} s (stated)`, worst <= LITESTREAM_RPO_SECONDS);
    report('debits doubled after a restore', `${losses.reduce((n, l) => n + l.doubled, 0)}`, '0', losses.every((l) => l.doubled === 0));
    const restore = median(losses.map((l) => l.restoreSeconds));
    const serve = median(losses.map((l) => l.rto - l.restoreSeconds));
    info(`RTO: loss to first answered call (median of ${runs})`, `${fmt(median(losses.map((l) => l.rto)))} s`, `restore ${fmt(restore)} s, then start and first answer ${fmt(serve)} s`);
    info('baseline: kill -9, disk intact, to first answered call', `${fmt(median(restarts))} s`, '(the same load, the same store, the same run)');
  } finally {
    rmSync(template, { recursive: true, force: true });
  }
}
