import { expect } from 'chai';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreBusyError, beginReplay, registerServer } from '../../src/app/store-users.js';
import { tempDir } from '../support/server.js';

/**
 * The server/replay exclusion of src/app/store-users.ts, within one process (the locks conflict
 * between connections of one process as between processes; test/e2e/replay-beside-server.test.ts
 * shows them across processes and under kill -9).
 */
describe('Servers and replays of one data directory', () => {
  let dir: string;
  beforeEach(() => (dir = tempDir('scores-store-users-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lets several servers share the store, and refuses a replay until the last one is gone', () => {
    const a = registerServer(dir);
    const b = registerServer(dir);
    expect(() => beginReplay(dir)).to.throw(StoreBusyError, /a server is running on .*: stop it, run the replay, then start it again/);
    a();
    expect(() => beginReplay(dir)).to.throw(StoreBusyError, /a server is running/);
    b();
    const done = beginReplay(dir);
    done();
  });

  it('refuses a server and a second replay while a replay runs, and both once it has finished', () => {
    const done = beginReplay(dir);
    expect(() => registerServer(dir)).to.throw(StoreBusyError, /a replay is rebuilding the read models of .*; start the server once it has finished/);
    expect(() => beginReplay(dir)).to.throw(StoreBusyError, /another replay is rebuilding the read models/);
    done();
    const server = registerServer(dir);
    server();
    beginReplay(dir)();
  });

  it('a refused replay leaves nothing held: a server starts right after', () => {
    const server = registerServer(dir);
    expect(() => beginReplay(dir)).to.throw(StoreBusyError);
    const other = registerServer(dir);
    other();
    server();
    beginReplay(dir)();
  });

  it('ignores the pid files of earlier versions, even those naming a live process', () => {
    const run = join(dir, 'run');
    mkdirSync(run, { recursive: true });
    const record = JSON.stringify({ pid: process.pid, since: new Date().toISOString() });
    writeFileSync(join(run, `server-${process.pid}`), record);
    writeFileSync(join(run, 'replay'), record);
    const done = beginReplay(dir);
    done();
    registerServer(dir)();
  });

  it('releases twice harmlessly', () => {
    const server = registerServer(dir);
    server();
    server();
    const done = beginReplay(dir);
    done();
    done();
  });
});
