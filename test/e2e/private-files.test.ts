/**
 * Nothing the service writes is readable by another local user, whatever the umask it is started
 * with: `scores serve` and `scores exports run` under umask 022 on a data directory left wider
 * (0755, with a 0644 file in it), then every path under it is owner-only, and `nobody` cannot read
 * the store or a mail even once the directory is opened to it.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnCli, until } from '../support/processes.js';
import { cookiesOf, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-01-10T12:00:00Z';

/** The `scores` CLI from source under `umask 022`, with what it has written so far. */
function cliUnderUmask022(args: string[], env: NodeJS.ProcessEnv) {
  const { child, done } = spawnCli(args, env, { umask: '022' });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, done, out: () => stdout, err: () => stderr };
}

/** Every path under `root` (itself included) with its permission bits. */
function modes(root: string): { path: string; mode: number }[] {
  const out: { path: string; mode: number }[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    out.push({ path: path.slice(root.length) || '/', mode: stat.mode & 0o777 });
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return out;
}

describe('Files the service writes are owner-only, whatever the umask', function () {
  this.timeout(240_000);
  const dir = tempDir('scores-private-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('narrows a wide data directory at start (said once in the log) and writes store, WAL, keys, outbox and exports 0600 / 0700', async () => {
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'notes.txt'), 'left by an older release\n');
    chmodSync(join(dir, 'notes.txt'), 0o644);
    const env = testEnv(dir, NOW, { LOG_LEVEL: 'warn' });
    delete env['SMTP_URL'];

    const server = cliUnderUmask022(['serve'], env);
    try {
      await until(() => /listening on (http:\/\/\S+)/.test(server.err()), 150_000, 100);
      const base = /listening on (http:\/\/\S+)/.exec(server.err())![1]!;
      // A mail in the outbox: the sign-in link it carries is a credential.
      const form = await fetch(`${base}/account/sign-in`);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const asked = await fetch(`${base}/account/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookiesOf(form) },
        body: new URLSearchParams({ _csrf: csrf, email: 'private@example.com' }).toString(),
      });
      expect(asked.status).to.be.oneOf([200, 303]);
      await until(() => /written to \S+\.eml/.test(server.err()), 10_000);
      // While it runs: SQLite removes its WAL and shared-memory files at the last close.
      const open = modes(dir).filter((w) => /^\/scores\.sqlite-(wal|shm)$/.test(w.path));
      expect(open.map((w) => `${w.path} ${w.mode.toString(8)}`)).to.deep.equal(['/scores.sqlite-shm 600', '/scores.sqlite-wal 600']);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect((await server.done).code).to.equal(0);
    const warnings = server.out().split('\n').filter((l) => l.includes('made owner-only'));
    expect(warnings, 'one log line for the narrowed directory').to.have.length(1);
    expect(JSON.parse(warnings[0]!)).to.include({ data_dir: dir, paths: 2 });

    const exported = cliUnderUmask022(['exports', 'run', '--json'], { ...env, LOG_LEVEL: 'silent' });
    expect((await exported.done).code, (await exported.done).stderr).to.equal(0);

    const written = modes(dir);
    for (const expected of ['/scores.sqlite', '/outbox', '/exports']) expect(written.map((w) => w.path)).to.include(expected);
    expect(written.filter((w) => (w.mode & 0o077) !== 0).map((w) => `${w.path} ${w.mode.toString(8)}`)).to.deep.equal([]);
  });

  it('refuses another local user the store and the mails, even through an open directory', function () {
    if (process.getuid?.() !== 0 || spawnSync('runuser', ['--help']).status !== 0) return this.skip(); // needs root to act as `nobody`
    const eml = readdirSync(join(dir, 'outbox')).find((n) => n.endsWith('.eml'))!;
    // Opened as a careless operator might: only the files' own modes stand in the way.
    for (const d of [dir, join(dir, 'outbox')]) chmodSync(d, 0o755);
    for (const file of [join(dir, 'scores.sqlite'), join(dir, 'outbox', eml)]) {
      const read = spawnSync('runuser', ['-u', 'nobody', '--', 'cat', file], { encoding: 'utf8' });
      expect(read.status, file).to.not.equal(0);
      expect(read.stderr).to.contain('Permission denied');
    }
  });
});
