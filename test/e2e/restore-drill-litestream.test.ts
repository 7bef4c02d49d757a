/**
 * The restore drill (issue 43): a server on the embedded store under metered load on 50
 * connections, Litestream replicating it (`scores replicate`) to a local replica; kill -9 of the
 * server and of Litestream, the data directory deleted, `scores replicate restore`, the server
 * started again. Every call answered 200 more than the stated RPO before the loss must be in the
 * ledger exactly once, no debit doubled, the audit clean, the read models equal to a replay.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { checkedLitestream, LITESTREAM_RPO_SECONDS } from '../../src/app/backup/litestream.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { describeLoss, ledgerDebits, lossReport, meteredLoad } from '../support/restore-drill.js';
import { runCli, spawnCli, startServerProcess, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-06-14T12:00:00Z';
const ACCOUNT = 'demo-quant';

describe('Restore drill: Litestream replica after kill -9 and the loss of the data directory', function () {
  this.timeout(240_000);
  const dir = tempDir('scores-drill-');
  const replica = tempDir('scores-drill-replica-');
  const env = testEnv(dir, NOW);
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(replica, { recursive: true, force: true });
  });

  it(`loses no call acknowledged more than ${LITESTREAM_RPO_SECONDS} s before the loss, doubles none, and the restored store audits clean and equals a replay`, async function () {
    try {
      checkedLitestream(loadConfig(env));
    } catch (err) {
      console.log(`      skipped: ${(err as Error).message}`);
      return this.skip();
    }
    const server = await startServerProcess(env);
    const limit = await runCli(['rate-limit', 'set', '--account', ACCOUNT, '--per-second', 'unlimited'], env);
    expect(limit.code, limit.stderr).to.equal(0);
    const replication = spawnCli(['replicate', '--to', replica, '--json'], env);
    let said = '';
    replication.child.stdout!.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => said.includes('\n') || replication.child.exitCode !== null, 120_000, 100);
    if (replication.child.exitCode !== null) expect.fail(`scores replicate exited: ${(await replication.done).stderr}`);
    const litestreamPid = (JSON.parse(said) as { litestream: { pid: number } }).litestream.pid;

    const key = demoKey(dir, 'quant');
    const load = meteredLoad(server.url, [{ account: ACCOUNT, key, connections: 50 }], ['/v1/scores/AAPL']);
    await until(() => load.acknowledged.length >= 3_000, 120_000, 50);
    // The disk is lost: the server and Litestream die at the same instant, with everything on it.
    const loss = Date.now();
    for (const pid of [litestreamPid, server.pid, replication.child.pid!]) process.kill(pid, 'SIGKILL');
    await load.stop();
    await replication.done;
    rmSync(dir, { recursive: true, force: true });

    const restored = await runCli(['replicate', 'restore', '--from', replica, '--json'], env);
    expect(restored.code, restored.stderr).to.equal(0);
    const again = await startServerProcess(env);
    let firstAnswer = 0;
    try {
      const res = await fetch(`${again.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } });
      expect(res.status).to.equal(200);
      firstAnswer = Date.now();

      const report = lossReport(load.acknowledged, await ledgerDebits([ACCOUNT], env), loss);
      console.log(
        `      ${describeLoss(report, load.acknowledged.length)}; from the loss to the first answered call ${((firstAnswer - loss) / 1000).toFixed(1)} s (restore ${(JSON.parse(restored.stdout) as { seconds: number }).seconds.toFixed(1)} s)`,
      );
      const tooOld = report.lost.filter((l) => l.age > LITESTREAM_RPO_SECONDS * 1000);
      expect(tooOld, `calls acknowledged more than ${LITESTREAM_RPO_SECONDS} s before the loss, missing`).to.deep.equal([]);
      expect(report.doubled, 'request ids debited twice').to.deep.equal([]);
      expect(report.misplaced, 'request ids debited to another account').to.deep.equal([]);
      const audit = await runCli(['audit', '--all', '--json'], env);
      expect(audit.code, audit.stdout + audit.stderr).to.equal(0);
      expect(JSON.parse(audit.stdout)).to.include({ ok: true });
    } finally {
      await again.stop();
    }
    const services = await openServices(loadConfig(env));
    try {
      await services.runner.start();
      const live = await snapshotReadModels(services);
      await services.runner.replay();
      expect(await snapshotReadModels(services)).to.deep.equal(live);
    } finally {
      await services.close();
    }
  });
});
