import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { StoreBusyError, beginReplay } from '../../src/app/store-users.js';
import { programArgs, runCli, spawnCli, startServerProcess, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-02-15T12:00:00Z';

/** A separate process that takes the replay's locks (as `scores replay` does) and holds them until killed. */
async function replayHolder(dir: string): Promise<ChildProcess> {
  // The release is kept: a lock object the garbage collector takes closes its file, and the lock with it.
  const code = "const m = await import('./src/app/store-users.ts'); globalThis.release = m.beginReplay(process.argv[1]); console.log('held'); setInterval(() => {}, 1e6);";
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, dir], { cwd: projectRoot(), stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => out.includes('held'), 60_000);
  return child;
}

const killed = (child: ChildProcess) => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));

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
      const call = () => fetch(`${url}/v1/scores/AAPL`, { headers: { 'X-API-Key': demoKey(dir, 'hobbyist') } }).then((r) => r.status);
      expect(await call()).to.equal(200);
      // Metered calls go on during the attempt: each is a new event the server projects. Paced
      // under the hobbyist's request rate (20 per second), so every answer is the key's own.
      let calling = true;
      const statuses: number[] = [];
      const traffic = (async () => {
        while (calling) {
          statuses.push(await call());
          await new Promise((r) => setTimeout(r, 75));
        }
      })();
      const replay = await runCli(['replay'], env);
      calling = false;
      await traffic;
      expect(replay.code).to.equal(1);
      expect(replay.stderr).to.match(/a server is running on .*: stop it, run the replay, then start it again/);
      expect(new Set(statuses)).to.deep.equal(new Set([200]));
      expect(await call()).to.equal(200);
      // The same lock, taken from this process: refused too.
      expect(() => beginReplay(dir)).to.throw(StoreBusyError, /a server is running/);
    } finally {
      await server.stop();
    }
    // The server's lock went with it: the replay now runs, and the keys survive it.
    const replay = await runCli(['replay', '--json'], env);
    expect(replay.code, replay.stderr).to.equal(0);
    expect((JSON.parse(replay.stdout) as { events: number }).events).to.be.greaterThan(0);
  });

  it('refuses to serve while a replay holds the store, and serves once the replay is gone (kill -9 too)', async () => {
    const holder = await replayHolder(dir);
    try {
      const refused = await runCli(['serve'], env);
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.match(/a replay is rebuilding the read models of .*; start the server once it has finished/);
      const second = await runCli(['replay'], env);
      expect(second.code).to.equal(1);
      expect(second.stderr).to.match(/another replay is rebuilding the read models/);
    } finally {
      holder.kill('SIGKILL');
      await killed(holder);
    }
    // Killed with -9: the operating system released its locks, and the server starts.
    const { child, done } = spawnCli(['serve'], env);
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('listening on'), 120_000);
    child.kill('SIGTERM');
    expect((await done).code).to.equal(0);
  });

  it('a server killed with -9 leaves nothing that blocks the replay', async () => {
    const server = spawn(process.execPath, programArgs('src/app/main.ts'), { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
    let out = '';
    server.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('listening on'), 120_000);
    expect((await runCli(['replay'], env)).code, 'refused while it runs').to.equal(1);
    server.kill('SIGKILL');
    await killed(server);
    const replay = await runCli(['replay', '--json'], env);
    expect(replay.code, replay.stderr).to.equal(0);
  });

  it('ignores the pid files of earlier versions, even naming live processes (a reused pid)', async () => {
    const run = join(dir, 'run');
    mkdirSync(run, { recursive: true });
    // Live, unrelated processes: this test runner, and a sleeper.
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const since = new Date().toISOString();
      writeFileSync(join(run, `server-${process.pid}`), JSON.stringify({ pid: process.pid, since }));
      writeFileSync(join(run, `server-${sleeper.pid}`), JSON.stringify({ pid: sleeper.pid, since }));
      const replay = await runCli(['replay', '--json'], env);
      expect(replay.code, replay.stderr).to.equal(0);
      writeFileSync(join(run, 'replay'), JSON.stringify({ pid: sleeper.pid, since }));
      const { child, done } = spawnCli(['serve'], env);
      let out = '';
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await until(() => out.includes('listening on'), 120_000);
      child.kill('SIGTERM');
      expect((await done).code).to.equal(0);
    } finally {
      sleeper.kill();
      await killed(sleeper);
    }
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
      try {
        const r = await runCli(['serve', '--port', String(port)], env);
        expect(r.code).to.equal(1);
        expect(r.stderr.trim()).to.equal(`cannot listen on 127.0.0.1:${port}: the address is in use`);
      } finally {
        taken.close();
      }
    });
  });
});
