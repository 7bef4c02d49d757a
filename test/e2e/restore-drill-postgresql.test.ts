import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { runCli, startServerProcess, until } from '../support/processes.js';
import { privatePostgresMissing, startPrivateCluster, type PrivateCluster } from '../support/private-postgresql.js';
import { describeLoss, ledgerDebits, lossReport, meteredLoad, type Acknowledged, type Caller } from '../support/restore-drill.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

/** About 60 trading days of the demo: a thousand events, seeded in seconds. */
const NOW = '2019-03-29T12:00:00Z';
/**
 * The drill's cluster switches a segment holding a write after 5 s, where the engines' switch
 * after 60 (ENGINES_PG_ARCHIVE_TIMEOUT): the same bound, reached in a drill short enough for CI.
 */
const ARCHIVE_TIMEOUT_S = 5;
/**
 * The RPO the drill holds the restore to: a segment holding a call's debit is switched within
 * archive_timeout of it, then copied and synced by the archiver, allowed 10 s on a loaded machine.
 */
const STATED_RPO_MS = (ARCHIVE_TIMEOUT_S + 10) * 1000;
/** Acknowledged calls older than the RPO at the loss: what the drill must find restored (not a speed: a count). */
const OLD_ENOUGH = 300;
const PATHS = ['/v1/scores/AAPL', '/v1/scores/KO', '/v1/scores/MSFT/history?start=2019-03-01'];

type Server = Awaited<ReturnType<typeof startServerProcess>>;

/** Metered calls until one is answered 200 (the first after the restore), then `count` more: all acknowledged. */
async function callsAfterRestore(url: string, callers: readonly Caller[], count: number): Promise<Acknowledged[]> {
  const answered: Acknowledged[] = [];
  await until(async () => {
    const res = await fetch(`${url}${PATHS[0]}`, { headers: { 'X-API-Key': callers[0]!.key } }).catch(() => null);
    if (res?.status === 200) answered.push({ requestId: res.headers.get('x-request-id')!, account: callers[0]!.account, at: Date.now() });
    await res?.arrayBuffer();
    return answered.length > 0;
  }, 60_000, 100);
  for (let i = 0; i < count; i++) {
    const caller = callers[i % callers.length]!;
    const res = await fetch(`${url}${PATHS[i % PATHS.length]}`, { headers: { 'X-API-Key': caller.key } });
    await res.arrayBuffer();
    expect(res.status, `call ${i} after the restore`).to.equal(200);
    answered.push({ requestId: res.headers.get('x-request-id')!, account: caller.account, at: Date.now() });
  }
  return answered;
}

/** The read models the service kept, caught up with the log, beside a replay of the log into a schema of their own. */
async function liveAndReplayed(env: NodeJS.ProcessEnv): Promise<[Record<string, unknown[]>, Record<string, unknown[]>]> {
  const live = await openServices(loadConfig(env));
  let served: Record<string, unknown[]>;
  try {
    await live.runner.start();
    await live.runner.waitForHead();
    served = await snapshotReadModels(live);
  } finally {
    await live.close();
  }
  const fresh = await openServices(loadConfig({ ...env, READ_MODELS_SCHEMA: 'read_models_drill_replay' }));
  try {
    await fresh.runner.replay();
    return [served, await snapshotReadModels(fresh)];
  } finally {
    await fresh.close();
  }
}

/**
 * Issue 43's restore drill on the engines: the event log on a private PostgreSQL cluster that
 * archives its WAL as `npm run engines` sets it up, a base backup, metered load on 50 connections,
 * then the disk lost (kill -9 of the server and the postmaster, the data directory deleted), and the
 * documented restore: `postgresql-restore` (the base backup and the archive), `scores replay`, the
 * service started again (docs/backup-postgresql.md).
 */
describe('Restore drill: the PostgreSQL log from a base backup and its WAL archive', function () {
  this.timeout(300_000);
  const missing = privatePostgresMissing();
  if (missing) {
    it(`runs where ${missing} are installed (it makes a cluster of its own, never the shared one)`);
    return;
  }
  const dir = tempDir('scores-drill-');
  let cluster: PrivateCluster | undefined;
  let server: Server | undefined;
  after(async () => {
    await server?.stop();
    await cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds every call acknowledged more than the RPO before the loss in its ledger once, audits clean, and its read models equal a replay', async () => {
    cluster = await startPrivateCluster({ archiveTimeout: ARCHIVE_TIMEOUT_S });
    const env = testEnv(dir, NOW, { POSTGRES_URL: cluster.url, READ_STORE: 'postgres' });
    server = await startServerProcess(env);
    const callers: Caller[] = [
      { account: 'demo-enterprise', key: demoKey(dir, 'enterprise'), connections: 30 },
      { account: 'demo-quant', key: demoKey(dir, 'quant'), connections: 12 },
      { account: 'demo-builder', key: demoKey(dir, 'builder'), connections: 8 },
    ];
    const backup = await cluster.backup();

    const load = meteredLoad(server.url, callers, PATHS);
    await until(() => load.acknowledged.filter((a) => a.at < Date.now() - STATED_RPO_MS).length >= OLD_ENOUGH, 120_000, 250);
    process.kill(server.pid, 'SIGKILL');
    const lossAt = Date.now();
    await cluster.lose();
    await load.stop();
    await server.stop();

    const restoredTo = await cluster.restore(backup);
    const restored = Date.now();
    const replay = await runCli(['replay', '--json'], env);
    expect(replay.code, replay.stderr).to.equal(0);
    const replayed = Date.now();
    server = await startServerProcess(env);
    const after = await callsAfterRestore(server.url, callers, 30);
    const rto = after[0]!.at - lossAt;
    await server.stop();

    const accounts = callers.map((c) => c.account);
    const [debits, audit, [served, rebuilt]] = await Promise.all([ledgerDebits(accounts, env), runCli(['audit', '--all', '--json'], env), liveAndReplayed(env)]);
    const report = lossReport([...load.acknowledged, ...after], debits, lossAt);
    console.log(`      ${describeLoss(report, load.acknowledged.length)} (the stated RPO ${STATED_RPO_MS / 1000} s; the log restored to ${restoredTo})`);
    console.log(
      `      loss to the first answered call ${(rto / 1000).toFixed(1)} s: restore ${((restored - lossAt) / 1000).toFixed(1)} s, ` +
        `scores replay ${((replayed - restored) / 1000).toFixed(1)} s, start and first call ${((after[0]!.at - replayed) / 1000).toFixed(1)} s`,
    );
    expect(report.lost.filter((l) => l.age > STATED_RPO_MS), 'acknowledged more than the RPO before the loss, and not in the ledger').to.deep.equal([]);
    expect(after.filter((a) => !debits.has(a.requestId)), 'acknowledged after the restore, and not in the ledger').to.deep.equal([]);
    expect(report.doubled, 'request ids debited more than once').to.deep.equal([]);
    expect(report.misplaced, 'request ids debited to another account').to.deep.equal([]);
    expect(audit.code, audit.stdout + audit.stderr).to.equal(0);
    expect(JSON.parse(audit.stdout)).to.include({ ok: true });
    expect(Object.keys(rebuilt)).to.have.length.greaterThan(10);
    expect(served).to.deep.equal(rebuilt);
  });
});
