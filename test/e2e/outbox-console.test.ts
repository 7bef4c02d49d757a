/**
 * Sign-in without a mail server, as an operator runs it: `scores serve` with no SMTP_URL, a
 * sign-in asked for over HTTP, and what the console shows. The JSON log stays on stdout; the
 * outbox line (and, on a demo deployment, the link) goes to stderr, and the link works.
 */
import { expect } from 'chai';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { spawnCli, until } from '../support/processes.js';
import { cookiesOf, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-01-10T12:00:00Z';

describe('A server without SMTP_URL prints where each mail went', function () {
  this.timeout(180_000);
  const dir = tempDir('outbox-console-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the .eml path and the sign-in link on stderr, not in the JSON log, and the link in the file is whole and works', async () => {
    const env = testEnv(dir, NOW, { LOG_LEVEL: 'info' });
    delete env['SMTP_URL'];
    const { child, done } = spawnCli(['serve'], env);
    let err = '';
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await until(() => /listening on (http:\/\/\S+)/.test(err), 150_000);
      const base = /listening on (http:\/\/\S+)/.exec(err)![1]!;

      const form = await fetch(`${base}/account/sign-in`);
      const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
      expect(token, 'the form carries a CSRF token').to.be.a('string');
      const asked = await fetch(`${base}/account/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookiesOf(form) },
        body: new URLSearchParams({ _csrf: token!, email: 'operator@example.com' }).toString(),
      });
      expect(asked.status, await asked.clone().text()).to.be.oneOf([200, 303]);

      const printed = /Mail written to (\S+\.eml) \(no SMTP_URL set\)\n {2}sign-in link: (\S+)\n/;
      await until(() => printed.test(err), 10_000);
      const [, file, link] = printed.exec(err)!;
      expect(existsSync(file!)).to.equal(true);
      expect(link).to.match(new RegExp(`^${base.replace(/[.:/]/g, '\\$&')}/account/sign-in/[A-Za-z0-9_-]+$`));
      // The file holds the same link on one line of its own: no quoted-printable soft break in it.
      expect(readFileSync(file!, 'utf8').split('\r\n')).to.include(link);
      expect(out, 'the JSON log on stdout does not carry the mail line').not.to.contain('written to');
      expect(err + out, 'no line names the address: a log outlives a forgotten account').not.to.contain('operator@example.com');

      const opened = await fetch(link!);
      expect(opened.status).to.equal(200);
      expect(await opened.text()).to.contain('Sign in as operator@example.com');
    } finally {
      child.kill('SIGTERM');
    }
    expect((await done).code).to.equal(0);
  });
});
