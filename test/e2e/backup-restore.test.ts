import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueInvoice } from '../../commands/billing/invoice.handler.js';
import { createAccountWithKey, loadAccount } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { forgetAccount } from '../../src/app/forget-account.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import type { BackupManifest } from '../../src/app/backup/store-backup.js';
import { rewriteLedger } from '../support/ledger-rewrite.js';
import { runCli, spawnCli } from '../support/processes.js';
import { ledgerDebits, lossReport, meteredLoad, type Acknowledged } from '../support/restore-drill.js';
import { getJson, startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

const NOW = '2024-04-20T12:00:00Z';
/** A restart in May: its first call closes April, whose invoice carries a signed ledger head. */
const LATER = '2024-05-02T09:00:00Z';

/** The manifest of a backup whose files were changed, made to match them again (what an attacker with the backup does). */
function resealManifest(dir: string, edit: (m: BackupManifest) => void = () => undefined): void {
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as BackupManifest;
  manifest.files = manifest.files.map((f) => ({ ...f, bytes: statSync(join(dir, f.name)).size, sha256: createHash('sha256').update(readFileSync(join(dir, f.name))).digest('hex') }));
  edit(manifest);
  writeFileSync(path, JSON.stringify(manifest));
}

/**
 * Issue 43, item 2: `scores backup` copies the embedded store online while the server serves
 * metered calls, and `scores restore` refuses a backup that is cut short, truncated or edited
 * (its chain broken, or rewritten whole against an invoice's signed head), leaving nothing.
 */
describe('scores backup and scores restore (the embedded store)', function () {
  this.timeout(240_000);
  const dir = tempDir('scores-backup-src-');
  const backup = tempDir('scores-backup-');
  /** A second backup, taken after an account was forgotten. */
  const later = tempDir('scores-backup-later-');
  let gone = '';
  const scratch: string[] = [];
  const env = testEnv(dir, LATER, { SCORES_LOG_DEBITS: 'events' });
  let account = '';
  let key = '';
  /** Calls answered before `scores backup` started, and every call answered at all. */
  let ackedBefore: Acknowledged[] = [];
  let acked: Acknowledged[] = [];
  let backupRun: { code: number | null; stdout: string; stderr: string };

  const freshDir = () => {
    const d = tempDir('scores-restore-');
    scratch.push(d);
    return d;
  };
  const restore = (from: string, into = freshDir()) => runCli(['restore', from, '--json'], testEnv(into, LATER, { SCORES_LOG_DEBITS: 'events' }));
  const tampered = (edit: (copy: string) => void) => {
    const copy = freshDir();
    cpSync(backup, copy, { recursive: true });
    edit(copy);
    return copy;
  };

  before(async () => {
    let server: TestServer = await startTestServer({ now: NOW, dir, env: { SCORES_LOG_DEBITS: 'events' } });
    try {
      const k = await createAccountWithKey(server.services, { tier: 'hobbyist' });
      account = k.account_id;
      key = k.key;
      await server.services.ledger.execute(account, { type: 'PurchasePack', data: { pack_id: 'pack-10k', credits: 10_000 } });
      for (let i = 0; i < 3; i++) expect((await getJson(`${server.url}/v1/scores/AAPL`, key)).status).to.equal(200);
    } finally {
      await server.stop();
    }
    server = await startTestServer({ now: LATER, dir, env: { SCORES_LOG_DEBITS: 'events' } });
    try {
      expect((await getJson(`${server.url}/v1/scores/MSFT`, key)).status).to.equal(200);
      await server.services.runner.waitForHead();
      const { invoice } = await issueInvoice({ ...server.services, signer: server.services.keyring.signer }, account, '2024-04');
      expect(invoice.ledger_head, 'April is invoiced with a signed head').to.not.equal(undefined);
      // Metered load on 16 connections while `scores backup` runs in a process of its own.
      const load = meteredLoad(server.url, [{ account, key, connections: 16 }], ['/v1/scores/AAPL']);
      await new Promise((r) => setTimeout(r, 500));
      ackedBefore = [...load.acknowledged];
      gone = (await createAccountWithKey(server.services, { tier: 'free', email: 'gone@example.com' })).account_id;
      const run = spawnCli(['backup', backup, '--json'], env);
      backupRun = await run.done;
      await load.stop();
      acked = load.acknowledged;
      await forgetAccount(server.services, gone);
      expect((await runCli(['backup', later], env)).code).to.equal(0);
    } finally {
      await server.stop();
    }
  });
  after(() => {
    for (const d of [dir, backup, later, ...scratch]) rmSync(d, { recursive: true, force: true });
  });

  it('writes a backup under load: the store, the keys and a manifest with the log head and every ledger verified', () => {
    expect(backupRun.code, backupRun.stderr).to.equal(0);
    const manifest = JSON.parse(readFileSync(join(backup, 'manifest.json'), 'utf8')) as BackupManifest;
    expect(manifest.files.map((f) => f.name)).to.deep.equal(['account-keys.sqlite', 'data-encryption-keys.json', 'ledger-signing-key.json', 'scores.sqlite']);
    expect(manifest.head_position).to.be.a('string');
    expect(manifest.ledgers.map((l) => l.account_id)).to.include(account);
    expect(ackedBefore.length, 'calls were answered before the backup').to.be.greaterThan(0);
    expect(acked.length, 'and while it ran').to.be.greaterThan(ackedBefore.length);
    for (const f of readdirSync(backup)) expect(statSync(join(backup, f)).mode & 0o077, `${f} is owner-only`).to.equal(0);
  });

  it('restores it into an empty data directory, verified, with every call answered before the backup exactly once', async () => {
    const into = freshDir();
    const out = await restore(backup, into);
    expect(out.code, out.stderr).to.equal(0);
    const report = JSON.parse(out.stdout) as { head_position: string; accounts: number; signed_heads_checked: number };
    const manifest = JSON.parse(readFileSync(join(backup, 'manifest.json'), 'utf8')) as BackupManifest;
    expect(report.head_position).to.equal(manifest.head_position);
    expect(report.signed_heads_checked).to.be.greaterThan(0);
    const loss = lossReport(ackedBefore, await ledgerDebits([account], testEnv(into, LATER)), Date.now());
    expect(loss.doubled, 'no debit twice').to.deep.equal([]);
    expect(loss.lost.map((a) => a.requestId), 'answered before the backup started, missing from it').to.deep.equal([]);
    // Again into the same directory: refused, the restored store untouched.
    const again = await restore(backup, into);
    expect(again.code).to.equal(1);
    expect(JSON.parse(again.stderr)).to.include({ code: 'restore_target_not_empty' });
  });

  it('refuses a backup cut short (no manifest) and a truncated one, leaving no store behind', async () => {
    for (const [name, copy] of [
      ['no manifest', tampered((c) => rmSync(join(c, 'manifest.json')))],
      ['truncated', tampered((c) => truncateSync(join(c, 'scores.sqlite'), 65_536))],
    ] as const) {
      const into = freshDir();
      const out = await restore(copy, into);
      expect(out.code, name).to.equal(3);
      expect(JSON.parse(out.stderr), name).to.include({ code: 'backup_invalid' });
      expect(existsSync(join(into, 'scores.sqlite')), name).to.equal(false);
    }
  });

  it('refuses a backup whose log was edited, even with the manifest made to match: the hash chain breaks', async () => {
    const copy = tampered((c) => {
      const db = openSqlite(join(c, 'scores.sqlite'));
      const row = db.prepare("SELECT position, data FROM events WHERE stream_id = ? AND type = 'PackPurchased'").get(ledgerStream(account)) as { position: number; data: string };
      db.prepare('UPDATE events SET data = ? WHERE position = ?').run(row.data.replace('"credits":10000', '"credits":1000000'), row.position);
      db.close();
      resealManifest(c);
    });
    const into = freshDir();
    const out = await restore(copy, into);
    expect(out.code).to.equal(3);
    const problem = JSON.parse(out.stderr) as { code: string; detail: string };
    expect(problem.code).to.equal('restore_audit_failed');
    expect(problem.detail).to.match(/hash chain|chain/i);
    expect(readdirSync(into)).to.deep.equal([]);
  });

  it('audits every ledger of the restored log, not only those the backup\'s read models name: an edited account hidden from them is refused', async () => {
    const copy = tampered((c) => {
      const db = openSqlite(join(c, 'scores.sqlite'));
      const row = db.prepare("SELECT position, data FROM events WHERE stream_id = ? AND type = 'PackPurchased'").get(ledgerStream(account)) as { position: number; data: string };
      db.prepare('UPDATE events SET data = ? WHERE position = ?').run(row.data.replace('"credits":10000', '"credits":1000000'), row.position);
      // ...and the account taken out of every read model, and out of the manifest.
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\'").all() as { name: string }[];
      for (const { name } of tables) db.prepare(`DELETE FROM ${name} WHERE id LIKE ? OR doc LIKE ?`).run(`%${account}%`, `%${account}%`);
      db.close();
      resealManifest(c, (m) => {
        m.ledgers = m.ledgers.filter((l) => l.account_id !== account);
      });
    });
    const into = freshDir();
    const out = await restore(copy, into);
    expect(out.code, out.stdout).to.equal(3);
    const problem = JSON.parse(out.stderr) as { code: string; detail: string };
    expect(problem.code).to.equal('restore_audit_failed');
    expect(problem.detail).to.include(account);
    expect(readdirSync(into)).to.deep.equal([]);
  });

  it('refuses a log rewritten with its chain recomputed and the manifest to match: the signed head on the invoice', async () => {
    const copy = tampered((c) => {
      rewriteLedger(join(c, 'scores.sqlite'), account, (type, data) => {
        if (type !== 'PackPurchased') return false;
        data['credits'] = 1_000_000;
        return true;
      });
      const db = openSqlite(join(c, 'scores.sqlite'));
      const last = db.prepare('SELECT data FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1').get(ledgerStream(account)) as { data: string };
      db.close();
      resealManifest(c, (m) => {
        m.ledgers = m.ledgers.map((l) => (l.account_id === account ? { ...l, last_hash: (JSON.parse(last.data) as { hash: string }).hash } : l));
      });
    });
    const into = freshDir();
    const out = await restore(copy, into);
    expect(out.code).to.equal(3);
    const problem = JSON.parse(out.stderr) as { code: string; detail: string };
    expect(problem.code).to.equal('restore_audit_failed');
    expect(problem.detail, problem.detail).to.match(/Invoice .*no longer has the hash signed on it/);
    expect(readdirSync(into)).to.deep.equal([]);
  });

  it('forgets again what the restored log says was forgotten, when the key store comes from an older copy', async () => {
    // The log of the later backup (the account forgotten), the key store of the earlier one (its key still there).
    const mixed = tampered((c) => {
      rmSync(c, { recursive: true, force: true });
      cpSync(later, c, { recursive: true });
      cpSync(join(backup, 'account-keys.sqlite'), join(c, 'account-keys.sqlite'));
      resealManifest(c);
    });
    const into = freshDir();
    const out = await restore(mixed, into);
    expect(out.code, out.stderr).to.equal(0);
    const s = await openServices(loadConfig(testEnv(into, LATER)));
    try {
      const account = await loadAccount(s.events, gone);
      expect(account.forgotten_at).to.be.a('string');
      expect(await s.personal.open(gone, account.email!, 'email')).to.equal(null);
    } finally {
      await s.close();
    }
  });
});
