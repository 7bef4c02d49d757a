import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { pgSession } from '../../infra/postgresql/database.js';
import { runCli, until } from '../support/processes.js';
import { privatePostgresMissing, startPrivateCluster, type PrivateCluster } from '../support/private-postgresql.js';
import { describeLoss, ledgerDebits, lossReport, meteredLoad, type Caller } from '../support/restore-drill.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';
import { load, start } from './http.bench.js';
import { fmt, info, median, report } from './stats.js';

/** The engines' archive_timeout (scripts/engines/postgresql.mjs): the RPO they state for a quiet log. */
const ARCHIVE_TIMEOUT_S = 60;
/**
 * Seconds of recorded load between a base backup and the loss: at random, from one archive_timeout
 * to two. The backup ends its WAL segment; the next is archived when full or archive_timeout after
 * that, so a loss anywhere in that span falls anywhere in the archiving cycle.
 */
const loadSeconds = () => ARCHIVE_TIMEOUT_S * (1 + Math.random());
const PATHS = ['/v1/scores/AAPL', '/v1/scores/KO', '/v1/scores/MSFT'];

/** The service (dist) on a private cluster's log and read models, with its own data directory. */
interface Service {
  cluster: PrivateCluster;
  dir: string;
  env: NodeJS.ProcessEnv;
  url: string;
  child: ChildProcess;
}

async function startService(cluster: PrivateCluster, dir: string, now: string): Promise<Service> {
  const env = testEnv(dir, now, { POSTGRES_URL: cluster.url, READ_STORE: 'postgres', PUBLIC_BASE_URL: 'http://localhost' });
  const server = await start(['dist/src/app/main.js'], env, /listening on http:\/\/localhost:(\d+)/);
  return { cluster, dir, env, url: `http://127.0.0.1:${server.port}`, child: server.child };
}

async function stopService(s: Service, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill(signal);
  await exited;
}

/** A seeded service (the demo up to `now`) on a private cluster that archives its WAL, or with archive_mode off (ALTER SYSTEM, which outranks the engines' file). */
async function seededService(now: string, archiving: boolean): Promise<Service> {
  const cluster = await startPrivateCluster();
  if (!archiving) {
    const db = await pgSession(cluster.url);
    await db.query('ALTER SYSTEM SET archive_mode = off');
    await db.end();
    await cluster.engines(['stop', 'postgresql']);
    await cluster.engines(['start', 'postgresql']);
  }
  const service = await startService(cluster, tempDir('scores-bench-pgbackup-'), now);
  // The demo accounts' rates set above any load here (the limit stays on: every call is checked).
  for (const account of ['demo-quant', 'demo-enterprise']) {
    const limit = await runCli(['rate-limit', 'set', '--account', account, '--per-second', '1000000'], service.env, { built: true });
    if (limit.code !== 0) throw new Error(limit.stderr);
  }
  await new Promise((r) => setTimeout(r, 3000));
  return service;
}

/** Segments the cluster has archived so far (pg_stat_archiver). */
async function archivedCount(cluster: PrivateCluster): Promise<number> {
  const db = await pgSession(cluster.url);
  try {
    const [row] = await db.query<{ n: string }>('SELECT archived_count::text AS n FROM pg_stat_archiver');
    return Number(row!.n);
  } finally {
    await db.end();
  }
}

/**
 * Metered `GET /v1/scores/AAPL` (autocannon, 50 connections) on both services in adjacent windows,
 * which goes first alternating: req/s with and without archiving, and the median of each pair's
 * ratio. The machine is shared: one window to the next varies by 2x or more, and a pair's two
 * windows, side by side in time, share most of that drift.
 */
async function archivingCost(on: Service, off: Service, pairs: number, seconds: number): Promise<void> {
  const targets = [on, off].map((s) => ({ url: `${s.url}/v1/scores/AAPL`, key: { 'X-API-Key': demoKey(s.dir, 'quant') } }));
  for (const t of targets) await load(t.url, t.key, 10); // warm-up
  const archivedBefore = await archivedCount(on.cluster);
  const figures: { rps: number; p99: number }[][] = [[], []];
  for (let i = 0; i < pairs; i++) {
    for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) figures[k]!.push(await load(targets[k]!.url, targets[k]!.key, seconds));
  }
  const archived = (await archivedCount(on.cluster)) - archivedBefore;
  const [a, b] = figures.map((f) => ({ rps: median(f.map((x) => x.rps)), p99: median(f.map((x) => x.p99)) })) as [{ rps: number; p99: number }, { rps: number; p99: number }];
  const ratio = median(figures[0]!.map((x, i) => x.rps / figures[1]![i]!.rps));
  info('metered GET, PostgreSQL without archiving', `${fmt(b.rps, 0)} req/s, p99 ${fmt(b.p99, 0)} ms`, `(baseline, same run; median of ${pairs} windows of ${seconds} s)`);
  info('metered GET, PostgreSQL archiving its WAL', `${fmt(a.rps, 0)} req/s, p99 ${fmt(a.p99, 0)} ms`, `(${archived} segments archived meanwhile)`);
  report('WAL archiving: metered throughput kept', `${fmt(ratio * 100, 0)}%`, '>= 90% of without', ratio >= 0.9);
}

/** One drill's figures: the window of acknowledged calls lost, and the time from the loss to the first answered call. */
interface DrillFigures {
  rpo: number;
  lost: number;
  acknowledged: number;
  rto: number;
  restore: number;
  replay: number;
  serve: number;
}

/**
 * A base backup, LOAD_SECONDS of metered load on 50 connections, the disk lost (kill -9 of the
 * server and the postmaster, the data directory deleted), then postgresql-restore, `scores replay`
 * and the service started again (all from dist), until a metered call is answered. Returns the
 * figures and the service running again on the restored cluster.
 */
async function drill(service: Service, now: string): Promise<{ figures: DrillFigures; service: Service }> {
  const { cluster, dir, env } = service;
  const callers: Caller[] = [
    { account: 'demo-enterprise', key: demoKey(dir, 'enterprise'), connections: 25 },
    { account: 'demo-quant', key: demoKey(dir, 'quant'), connections: 25 },
  ];
  const backup = await cluster.backup();
  const traffic = meteredLoad(service.url, callers, PATHS);
  await new Promise((r) => setTimeout(r, loadSeconds() * 1000));
  service.child.kill('SIGKILL');
  const lossAt = Date.now();
  await cluster.lose();
  await traffic.stop();
  await stopService(service);
  await cluster.restore(backup);
  const restored = Date.now();
  const replay = await runCli(['replay', '--json'], env, { built: true });
  if (replay.code !== 0) throw new Error(replay.stderr);
  const replayed = Date.now();
  const again = await startService(cluster, dir, now);
  let answeredAt = 0;
  await until(async () => {
    const res = await fetch(`${again.url}${PATHS[0]}`, { headers: { 'X-API-Key': callers[0]!.key } });
    await res.arrayBuffer();
    answeredAt = Date.now();
    return res.status === 200;
  }, 60_000, 50);
  const loss = lossReport(traffic.acknowledged, await ledgerDebits(callers.map((c) => c.account), env, true), lossAt);
  if (loss.doubled.length > 0 || loss.misplaced.length > 0) throw new Error(`debits doubled (${loss.doubled.length}) or misplaced (${loss.misplaced.length}) after the restore`);
  process.stderr.write(`  ${describeLoss(loss, traffic.acknowledged.length)}\n`);
  const figures = {
    rpo: Math.max(0, loss.lost[0]?.age ?? 0) / 1000,
    lost: loss.lost.length,
    acknowledged: traffic.acknowledged.length,
    rto: (answeredAt - lossAt) / 1000,
    restore: (restored - lossAt) / 1000,
    replay: (replayed - restored) / 1000,
    serve: (answeredAt - replayed) / 1000,
  };
  return { figures, service: again };
}

function reportDrills(drills: DrillFigures[], rows: string): void {
  const s = (xs: number[]) => xs.map((x) => fmt(x)).join(', ');
  const worst = Math.max(...drills.map((d) => d.rpo));
  report(
    `RPO, PostgreSQL log, ${rows}`,
    `${fmt(worst)} s`,
    `<= ${ARCHIVE_TIMEOUT_S} s (archive_timeout)`,
    worst <= ARCHIVE_TIMEOUT_S,
  );
  const counts = (xs: number[]) => xs.map((x) => fmt(x, 0)).join(', ');
  info('  acknowledged calls lost', counts(drills.map((d) => d.lost)), `(of ${counts(drills.map((d) => d.acknowledged))}; oldest lost per run, s: ${s(drills.map((d) => d.rpo))})`);
  const rto = median(drills.map((d) => d.rto));
  info(`RTO, PostgreSQL log, ${rows}`, `${fmt(rto)} s`, `(median of ${drills.length}: ${s(drills.map((d) => d.rto))} s)`);
  info('  restore / replay / start and first call', `${fmt(median(drills.map((d) => d.restore)))} / ${fmt(median(drills.map((d) => d.replay)))} / ${fmt(median(drills.map((d) => d.serve)))} s`, '(medians)');
}

/**
 * Issue 43 on the engines: WAL archiving's cost to metered throughput (two private clusters, one
 * archiving, in the same run), then `runs` restore drills on the archiving one with the full demo
 * store: the RPO (the age at the loss of the oldest acknowledged call missing after the restore: the
 * window lost) and the RTO (loss to the first answered call).
 */
export async function benchPgBackup(runs: number, now: string, seconds = 5): Promise<void> {
  const missing = privatePostgresMissing();
  if (missing) {
    process.stdout.write(`SKIP  PostgreSQL backup and restore: ${missing} missing\n`);
    return;
  }
  let on: Service | undefined;
  let off: Service | undefined;
  try {
    [on, off] = [await seededService(now, true), await seededService(now, false)];
    await archivingCost(on, off, 4 * runs, seconds);
    await stopService(off);
    const drills: DrillFigures[] = [];
    for (let i = 0; i < runs; i++) {
      const done = await drill(on, now);
      on = done.service;
      drills.push(done.figures);
      process.stderr.write(`  drill ${i + 1}/${runs}: RPO ${fmt(done.figures.rpo)} s, RTO ${fmt(done.figures.rto)} s\n`);
    }
    reportDrills(drills, `the demo to ${now.slice(0, 10)}, 50 connections`);
  } finally {
    for (const s of [on, off]) {
      if (!s) continue;
      await stopService(s);
      await s.cluster.destroy();
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
}
