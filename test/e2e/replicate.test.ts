/**
 * `scores replicate` and `scores replicate restore` (docs/backup-litestream.md) as processes: a
 * refusal's JSON problem, and, with the pinned Litestream installed, a point-in-time restore, a
 * restore of the newest transaction, and the refusal of a replica whose log was edited, which
 * leaves nothing behind (test/integration/replicate-refusals.test.ts has every refusal).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ACCOUNT_KEYS_FILE, SqliteAccountKeys } from '../../infra/sqlite/account-keys.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { checkedLitestream, replicaTarget, ReplicationError } from '../../src/app/backup/litestream.js';
import { restoreFromReplica } from '../../src/app/backup/litestream-restore.js';
import { openServices } from '../../src/app/container.js';
import { loadConfig } from '../../src/app/config.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { runCli, spawnCli, until, type Exit } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-05-10T12:00:00Z';

/** The one JSON problem `--json` writes on stderr, with the exit code. */
function problemOf(exit: Exit): { exit: number | null; code: string; detail: string } {
  const lines = exit.stderr.split('\n').filter(Boolean);
  expect(lines, exit.stderr).to.have.length(1);
  const problem = JSON.parse(lines[0]!) as { code: string; detail: string };
  return { exit: exit.code, code: problem.code, detail: problem.detail };
}

describe('scores replicate: a refusal is one JSON problem on stderr with its stable code', function () {
  this.timeout(60_000);
  const dir = tempDir('scores-replicate-');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const env = (extra: Record<string, string> = {}) => testEnv(dir, NOW, { SCORES_DEMO: 'off', ...extra });

  it('a missing Litestream exits 1 with litestream_missing (every refusal: test/integration/replicate-refusals.test.ts)', async () => {
    const missing = problemOf(await runCli(['replicate', '--to', join(dir, '..', 'elsewhere'), '--json'], env({ LITESTREAM_BIN: join(dir, 'no-litestream') })));
    expect(missing).to.include({ exit: 1, code: 'litestream_missing' });
  });
});

/** The newest transaction the replica of scores.sqlite holds (hex), as Litestream lists it. */
function replicaTxid(bin: string, replica: string): string {
  const out = spawnSync(bin, ['ltx', '-json', '-level', 'all', pathToFileURL(join(replica, 'scores')).href], { encoding: 'utf8' });
  if (out.status !== 0) return '';
  return ((JSON.parse(out.stdout) as { max_txid: string }[]).map((f) => f.max_txid).sort().at(-1)) ?? '';
}

describe('scores replicate with Litestream: point in time, newest, and an edited log refused', function () {
  this.timeout(240_000);
  const dir = tempDir('scores-replicate-');
  const replica = tempDir('scores-replicate-replica-');
  const restored = tempDir('scores-replicate-restored-');
  const env = (data = dir) => testEnv(data, NOW, { SCORES_DEMO: 'off' });
  let bin = '';
  let account = '';
  after(() => {
    for (const d of [dir, replica, restored]) rmSync(d, { recursive: true, force: true });
  });

  before(async function () {
    try {
      bin = checkedLitestream(loadConfig(env()));
    } catch (err) {
      console.log(`      skipped: ${(err as Error).message}`);
      return this.skip();
    }
    account = (JSON.parse((await runCli(['keys', 'create', '--tier', 'builder', '--json'], env())).stdout) as { account_id: string }).account_id;
  });

  /**
   * `scores replicate` until `whileUp` has run; then stopped by SIGTERM, or by a Ctrl-C (SIGINT to
   * its process group, as a terminal sends it: Litestream must get it once, or it skips its last
   * sync and exits 1).
   */
  async function replicating(whileUp: () => Promise<void>, stop: 'SIGTERM' | 'ctrl-c' = 'SIGTERM'): Promise<void> {
    const run = spawnCli(['replicate', '--to', replica, '--json'], env(), { group: true });
    let said = '';
    run.child.stdout!.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => said.includes('\n') || run.child.exitCode !== null, 120_000, 100);
    if (run.child.exitCode !== null) expect.fail(`scores replicate exited: ${(await run.done).stderr}`);
    await whileUp();
    if (stop === 'ctrl-c') process.kill(-run.child.pid!, 'SIGINT');
    else run.child.kill('SIGTERM');
    const exit = await run.done;
    expect(exit.code, `scores replicate stopped by ${stop}: ${exit.stderr}`).to.equal(0);
  }

  /** Appends to the log with the CLI, and waits until the replica holds the new transaction. */
  async function appendAndShip(args: string[]): Promise<void> {
    const before = replicaTxid(bin, replica);
    const r = await runCli(args, env());
    expect(r.code, r.stderr).to.equal(0);
    await until(() => replicaTxid(bin, replica) > before, 60_000, 200);
  }

  /** The packs in the account's ledger in a restored store. */
  const packs = async (data: string) => {
    const services = await openServices(loadConfig(env(data)));
    try {
      const events = await services.events.readStream(ledgerStream(account));
      return events.filter((e) => e.type === 'PackPurchased').map((e) => (e.data as { pack_id: string }).pack_id);
    } finally {
      await services.close();
    }
  };
  /** `scores replicate restore` in this process (test/e2e/restore-drill-litestream.test.ts runs the command). */
  const restore = (data: string, timestamp: string | null = null) =>
    restoreFromReplica(loadConfig(env(data)), { from: replicaTarget(replica), timestamp, keysFrom: join(replica, 'keys') });

  it('restores the log as of an instant, and as of its newest transaction, with the key files, audited clean (restoreFromReplica audits)', async () => {
    let between = '';
    await replicating(async () => {
      await appendAndShip(['packs', 'add', '--account', account, '--credits', '100', '--pack-id', 'pack-before']);
      // The replica's files are stamped when Litestream writes them: the instant falls clear of both.
      await new Promise((r) => setTimeout(r, 1100));
      between = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 1100));
      await appendAndShip(['packs', 'add', '--account', account, '--credits', '100', '--pack-id', 'pack-after']);
    }, 'ctrl-c');
    expect(await restore(join(restored, 'then'), between)).to.include({ timestamp: between, accounts: 1 });
    const tooEarly = await restore(join(restored, 'before'), '2020-01-01T00:00:00.000Z').then(
      () => expect.fail('restored as of an instant before the replica began'),
      (err: unknown) => err as ReplicationError,
    );
    expect(tooEarly).to.include({ code: 'replica_empty' });
    expect(existsSync(join(restored, 'before'))).to.equal(false);
    expect(await packs(join(restored, 'then'))).to.deep.equal(['pack-before']);

    const newest = await restore(join(restored, 'now'));
    expect(newest).to.include({ accounts: 1, timestamp: null });
    expect([...newest.keys].sort()).to.deep.equal(['data-encryption-keys.json', 'ledger-signing-key.json']);
    expect(await packs(join(restored, 'now'))).to.deep.equal(['pack-before', 'pack-after']);
  });

  it('destroys again the key of an account the restored log says is forgotten, when the key store\'s replica lags the log\'s', async () => {
    const made = await runCli(['keys', 'create', '--tier', 'free', '--email', 'forget.me@example.com', '--json'], env());
    expect(made.code, made.stderr).to.equal(0);
    const forgetMe = (JSON.parse(made.stdout) as { account_id: string }).account_id;
    const lagging = join(restored, 'account-keys-replica-before');
    await replicating(async () => {
      // Ready: the key store's replica holds the new account's key. As it is now, before the
      // forgetting, it is put back below: a replica of the key store that lags the log's.
      cpSync(join(replica, 'account-keys'), lagging, { recursive: true });
      const forgot = await runCli(['accounts', 'forget', forgetMe, '--yes'], env());
      expect(forgot.code, forgot.stderr).to.equal(0);
    });
    rmSync(join(replica, 'account-keys'), { recursive: true, force: true });
    cpSync(lagging, join(replica, 'account-keys'), { recursive: true });
    const report = await restore(join(restored, 'forgotten'));
    expect(report.forgotten_again).to.equal(1);
    const keys = new SqliteAccountKeys(join(restored, 'forgotten', ACCOUNT_KEYS_FILE));
    try {
      expect(await keys.find(forgetMe)).to.include({ wrapped: null });
    } finally {
      await keys.close();
    }
  });

  it('is ready only once the replica holds what was written while it was stopped; refuses a replica whose log was edited, and leaves no data directory behind', async () => {
    // Edited while nothing replicates (a ledger line changed without its hash).
    const db = openSqlite(join(dir, 'scores.sqlite'));
    try {
      const edited = db.prepare("UPDATE events SET data = json_set(data, '$.credits', 100000) WHERE stream_id = ? AND type = 'PackPurchased'").run(ledgerStream(account));
      expect(edited.changes).to.equal(2);
    } finally {
      db.close();
    }
    // Started again, then killed the instant it says it is ready: no last sync ships anything more.
    const run = spawnCli(['replicate', '--to', replica, '--json'], env(), { group: true });
    let said = '';
    run.child.stdout!.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => said.includes('\n') || run.child.exitCode !== null, 120_000, 20);
    if (run.child.exitCode !== null) expect.fail(`scores replicate exited: ${(await run.done).stderr}`);
    process.kill(-run.child.pid!, 'SIGKILL');
    process.kill((JSON.parse(said) as { litestream: { pid: number } }).litestream.pid, 'SIGKILL');
    await run.done;
    const target = join(restored, 'edited');
    const refused = await restore(target).then(
      () => expect.fail('restored'),
      (err: unknown) => err as ReplicationError,
    );
    expect(refused).to.be.instanceOf(ReplicationError).and.include({ code: 'restore_audit_failed' });
    expect(refused.message).to.match(/Hash chain broken at revision \d+ \(PackPurchased/);
    expect(existsSync(target), 'the data directory the restore created').to.equal(false);
  });
});
