/**
 * What `scores replicate` and `scores replicate restore` refuse before Litestream runs, each with
 * its stable code (docs/backup-litestream.md), and where a replica is read from `--to`/`--from`.
 * test/e2e/replicate.test.ts runs the commands as processes, with Litestream.
 */
import { expect } from 'chai';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkedLitestream, litestreamConfig, replicaOf, replicaTarget, ReplicationError } from '../../src/app/backup/litestream.js';
import { restoreFromReplica } from '../../src/app/backup/litestream-restore.js';
import { replicate } from '../../src/app/backup/litestream-replicate.js';
import { tryLock } from '../../infra/files/process-lock.js';
import { problemOfError } from '../../src/app/cli/cli-errors.js';
import { buildCli } from '../../src/app/cli/main.js';
import { loadConfig } from '../../src/app/config.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-05-10T12:00:00Z';

/** The problem the CLI would print for what `fn` throws. */
async function refusal(fn: () => Promise<unknown>): Promise<{ code: string; exit_code: number; detail: string; title: string }> {
  try {
    await fn();
  } catch (err) {
    return problemOfError(err);
  }
  throw new Error('not refused');
}

describe('scores replicate: refusals before Litestream runs', function () {
  this.timeout(60_000);
  const dir = tempDir('scores-replicate-');
  const elsewhere = tempDir('scores-replicate-target-');
  const config = (extra: Record<string, string> = {}) => loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off', ...extra }));
  const noop = { onReady: () => undefined, onLog: () => undefined };
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it('refuses a Litestream binary that is not there: litestream_missing, saying how to install it', async () => {
    const p = await refusal(async () => checkedLitestream(config({ LITESTREAM_BIN: join(elsewhere, 'none') })));
    expect(p).to.include({ code: 'litestream_missing', title: 'Litestream not installed', exit_code: 1 });
    expect(p.detail).to.include('npm run engines -- install litestream');
  });

  it('refuses a binary that is not Litestream v0.5.18: litestream_version, with what it answered', async () => {
    const p = await refusal(async () => checkedLitestream(config({ LITESTREAM_BIN: '/bin/echo' })));
    expect(p).to.include({ code: 'litestream_version', exit_code: 1 });
    expect(p.detail).to.include('/bin/echo is not Litestream v0.5.18 (it answers version)');
  });

  it('refuses a log that is not embedded, both ways: replication_unsupported', async () => {
    const pg = config({ POSTGRES_URL: 'postgres://scores@127.0.0.1:9/none' });
    const target = replicaTarget(join(elsewhere, 'r'));
    for (const p of [
      await refusal(() => replicate(pg, { target, keysTo: null, syncInterval: '1s', ...noop })),
      await refusal(() => restoreFromReplica(pg, { from: target, timestamp: null, keysFrom: null })),
    ]) {
      expect(p).to.include({ code: 'replication_unsupported', exit_code: 1 });
      expect(p.detail).to.include('on PostgreSQL (POSTGRES_URL)');
    }
  });

  it('refuses to restore into a data directory that holds anything, and leaves it as it was: restore_target_not_empty', async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'scores.sqlite'), 'a store');
    const p = await refusal(() => restoreFromReplica(config(), { from: replicaTarget(join(elsewhere, 'r')), timestamp: null, keysFrom: null }));
    expect(p).to.include({ code: 'restore_target_not_empty', title: 'Data directory holds a store', exit_code: 1 });
    expect(readdirSync(dir)).to.deep.equal(['scores.sqlite']);
  });

  it('refuses a second scores replicate on one data directory: busy (one Litestream per store)', async function () {
    try {
      checkedLitestream(config());
    } catch {
      return this.skip(); // Litestream is not installed: the lock is taken after the binary is checked
    }
    const held = tryLock(join(dir, 'run', 'replicate.lock'), 'exclusive')!;
    try {
      const p = await refusal(() => replicate(config(), { target: replicaTarget(join(elsewhere, 'r')), keysTo: null, syncInterval: '1s', ...noop }));
      expect(p).to.include({ code: 'busy', exit_code: 1 });
      expect(p.detail).to.include('another scores replicate runs on');
    } finally {
      held.release();
    }
  });

  it('maps a restore that does not verify to exit 3, as the audit does', () => {
    expect(problemOfError(new ReplicationError('restore_audit_failed', 'x'))).to.include({ code: 'restore_audit_failed', title: 'Restored log does not verify', exit_code: 3 });
  });

  describe('usage errors (exit 2), before anything runs', () => {
    const saved = { ...process.env };
    before(() => Object.assign(process.env, testEnv(dir, NOW, { SCORES_DEMO: 'off' })));
    after(() => {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    });
    const cases: [string, string[], RegExp][] = [
      ['no --to', ['replicate'], /required option '--to <replica>'/],
      ['a replica inside the data directory', ['replicate', '--to', join(dir, 'replica')], /is inside the data directory/],
      ['key files copied inside the data directory', ['replicate', '--to', join(elsewhere, 'r'), '--keys-to', join(dir, 'keys')], /--keys-to .* is inside the data directory/],
      ['object storage without a place for the key files', ['replicate', '--to', 's3://bucket/scores'], /--keys-to <dir> is needed with s3:\/\/bucket\/scores/],
      ['--keys-to with --without-keys', ['replicate', '--to', join(elsewhere, 'r'), '--keys-to', elsewhere, '--without-keys'], /--keys-to and --without-keys do not go together/],
      ['a sync interval out of range', ['replicate', '--to', join(elsewhere, 'r'), '--sync-interval', '10ms'], /from 100ms to 60s/],
      ['a restore without --from', ['replicate', 'restore'], /required option '--from <replica>'/],
      ['a timestamp without a zone', ['replicate', 'restore', '--from', join(elsewhere, 'r'), '--timestamp', '2024-05-10T12:00:00'], /--timestamp must be .*has no zone/],
      ['object storage without the key files\' place', ['replicate', 'restore', '--from', 'gs://bucket/scores'], /--keys-from <dir> is needed with gs:\/\/bucket\/scores/],
    ];
    for (const [what, argv, detail] of cases) {
      it(`refuses ${what}`, async () => {
        const cli = buildCli();
        for (const c of [cli, ...cli.commands, ...cli.commands.flatMap((c) => c.commands)]) c.configureOutput({ writeErr: () => undefined, outputError: () => undefined });
        const p = await refusal(() => cli.parseAsync(['node', 'scores', ...argv]));
        expect(p).to.include({ code: 'usage', exit_code: 2 });
        expect(p.detail).to.match(detail);
      });
    }
  });
});

describe('Where a replica is, and what Litestream is told', () => {
  it('reads a URL with a scheme as object storage, anything else (and file://) as a directory', () => {
    expect(replicaTarget('s3://bucket/scores/')).to.deep.equal({ kind: 'url', url: 's3://bucket/scores' });
    expect(replicaTarget('/mnt/backup/scores')).to.deep.equal({ kind: 'path', path: '/mnt/backup/scores' });
    expect(replicaTarget('file:///mnt/back%20up')).to.deep.equal({ kind: 'path', path: '/mnt/back up' });
    expect(replicaOf(replicaTarget('s3://bucket/x'), 'account-keys.sqlite')).to.deep.equal({ kind: 'url', url: 's3://bucket/x/account-keys' });
    expect(replicaOf(replicaTarget('/r'), 'scores.sqlite')).to.deep.equal({ kind: 'path', path: '/r/scores' });
  });

  it('gives each database its own replica, Litestream its checkpoints for 16 KiB pages, and quotes every path', () => {
    const yaml = litestreamConfig('/data "x"', replicaTarget('s3://bucket/scores'), { syncInterval: '500ms', logLevel: 'silent', socket: '/data "x"/run/litestream.sock' });
    expect(yaml).to.include('  - path: "/data \\"x\\"/scores.sqlite"\n').and.include('  - path: "/data \\"x\\"/account-keys.sqlite"\n');
    expect(yaml).to.include('      url: "s3://bucket/scores/scores"\n').and.include('      url: "s3://bucket/scores/account-keys"\n');
    expect(yaml).to.include('    truncate-page-n: 30000\n').and.include('      sync-interval: 500ms\n').and.include('  level: error\n');
    expect(yaml).to.include('socket:\n  enabled: true\n  path: "/data \\"x\\"/run/litestream.sock"');
  });
});
