import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runCli, spawnCli, startServerProcess, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-02-15T12:00:00Z';

describe('scores replay and a running server', function () {
  this.timeout(180_000);
  const dir = tempDir('scores-replay-lock-');
  const env = testEnv(dir, NOW, { PORT: '0' });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses the replay while a server serves metered calls, and the server keeps every key', async () => {
    expect((await runCli(['seed', '--json'], env)).code).to.equal(0);
    const server = await startServerProcess(env);
    const url = server.url;
    try {
      const call = () => fetch(`${url}/v1/scores/AAPL`, { headers: { 'X-API-Key': demoKey('hobbyist') } }).then((r) => r.status);
      expect(await call()).to.equal(200);
      // Metered calls go on during the attempt: each is a new event the server projects.
      let calling = true;
      const statuses: number[] = [];
      const traffic = (async () => {
        while (calling) statuses.push(await call());
      })();
      const replay = await runCli(['replay'], env);
      calling = false;
      await traffic;
      expect(replay.code).to.equal(1);
      expect(replay.stderr).to.match(/the server \(pid \d+\) is running on .*: stop it, run the replay, then start it again/);
      expect(new Set(statuses)).to.deep.equal(new Set([200]));
      expect(await call()).to.equal(200);
    } finally {
      await server.stop();
    }
    // The server's run file is gone with it: the replay now runs, and the keys survive it.
    expect(readdirSync(join(dir, 'run')).filter((f) => f.startsWith('server-'))).to.deep.equal([]);
    const replay = await runCli(['replay', '--json'], env);
    expect(replay.code, replay.stderr).to.equal(0);
    expect((JSON.parse(replay.stdout) as { events: number }).events).to.be.greaterThan(0);
    expect(existsSync(join(dir, 'run', 'replay'))).to.equal(false);
  });

  it('refuses to serve while a replay runs, and ignores the file of a replay that died', async () => {
    const run = join(dir, 'run');
    mkdirSync(run, { recursive: true });
    // A live process holds the replay's place.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      writeFileSync(join(run, 'replay'), JSON.stringify({ pid: holder.pid, since: new Date().toISOString() }));
      const refused = await runCli(['serve'], env);
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.match(new RegExp(`a replay \\(pid ${holder.pid}\\) is rebuilding the read models`));
      expect(readdirSync(run).filter((f) => f.startsWith('server-'))).to.deep.equal([]);
    } finally {
      holder.kill();
      await new Promise((r) => holder.on('exit', r));
    }
    // Its process is gone: the file is stale, and the server starts.
    const { child, done } = spawnCli(['serve'], env);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('listening on'), 120_000);
    child.kill('SIGTERM');
    expect((await done).code).to.equal(0);
    expect(existsSync(join(run, 'replay'))).to.equal(false);
    // A clean stop takes its own run file away.
    expect(existsSync(join(run, `server-${child.pid}`))).to.equal(false);
  });

  describe('When the server cannot listen', () => {
    it('refuses a --port that is not a port, naming the option', async () => {
      for (const port of ['abc', '99999', '-1', '1.5']) {
        const r = await runCli(['serve', '--port', port], env);
        expect(r.code, port).to.not.equal(0);
        expect(r.stderr, port).to.match(/--port.*must be an integer 0-65535/);
      }
    });

    it('exits with the reason when the port is taken, instead of hanging', async () => {
      const taken = createServer();
      await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
      const port = (taken.address() as AddressInfo).port;
      const servers = () => readdirSync(join(dir, 'run')).filter((f) => f.startsWith('server-'));
      const before = servers();
      try {
        const r = await runCli(['serve', '--port', String(port)], env);
        expect(r.code).to.equal(1);
        expect(r.stderr.trim()).to.equal(`cannot listen on 127.0.0.1:${port}: the address is in use`);
        // The refused server left no run file behind.
        expect(servers()).to.deep.equal(before);
      } finally {
        taken.close();
      }
    });
  });
});
