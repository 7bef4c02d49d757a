import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { projectRoot } from '../../src/core/paths.js';
import { startFleet, type Fleet } from '../../src/app/fleet/fleet.js';
import { programArgs, until } from '../support/processes.js';
import { FLEET_ENGINES, FLEET_READ_STORE, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { demoKey } from '../support/server.js';

/**
 * A week of demo history: every call here needs only some of it, and seeding it and the worker's
 * catch-up (on FerretDB above all) are most of the suite's time (a quarter of history took minutes).
 */
const NOW = '2019-01-10T12:00:00Z';

/** How many requests an API process answered on `route`, from its own /metrics. */
async function served(url: string, route: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('scores_http_request_duration_seconds_count') && l.includes(`route="${route}"`))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

describe('The local fleet: two API processes behind the front (one process per API key), one worker', function () {
  this.timeout(600_000);
  // PostgreSQL log, Kafka bus, read models on FLEET_READ_STORE (PostgreSQL; the MongoDB wire with SCORES_FLEET_READ_STORE=mongodb).
  const unset = unsetEngines(FLEET_ENGINES);
  if (unset.length > 0) {
    it(`runs on the engines when ${FLEET_ENGINES.join(', ')} are set (unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let dir: string;
  let fleet: Fleet | null = null;
  let argv1: string | undefined;

  before(async () => {
    sandbox = await openEnginesSandbox('fleet', NOW, { kafka: true, readStore: FLEET_READ_STORE });
    dir = sandbox.dir;
    // The processes run the CLI as the tests' other processes do (mocha's entry is put back after).
    argv1 = process.argv[1];
    process.argv[1] = programArgs('src/app/cli/bin.ts').at(-1)!;
    fleet = await startFleet({ apis: 2, workers: 1, port: 0, host: '127.0.0.1', env: sandbox.env });
  });

  after(async () => {
    await fleet?.stop();
    if (argv1 !== undefined) process.argv[1] = argv1;
    await sandbox?.drop();
  });

  it('spreads requests without a key round robin: two requests through the front land on two API processes', async () => {
    const apis = fleet!.processes.filter((p) => p.role === 'api');
    const before = await Promise.all(apis.map((a) => served(a.url, '/openapi.json')));
    for (let i = 0; i < 2; i++) expect((await fetch(`${fleet!.url}/openapi.json`)).status).to.equal(200);
    // A process counts a request when its response closes, which may be just after the front has
    // passed the answer on: both requests are counted before the split is compared.
    let counts: number[] = [];
    await until(async () => {
      const after = await Promise.all(apis.map((a) => served(a.url, '/openapi.json')));
      counts = after.map((n, i) => n - before[i]!);
      return counts[0]! + counts[1]! === 2;
    }, 10_000, 50);
    expect(counts).to.deep.equal([1, 1]);
  });

  it("sends one key's calls to one API process, and to the other while that one is killed (kill -9)", async () => {
    const key = demoKey(dir, 'hobbyist');
    const ok = async () => (await fetch(`${fleet!.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } })).status === 200;
    await until(ok, 60_000, 200);
    const apis = fleet!.processes.filter((p) => p.role === 'api');
    const before = await Promise.all(apis.map((a) => served(a.url, '/v1/scores/:ticker')));
    for (let i = 0; i < 6; i++) expect(await ok()).to.equal(true);
    const counts = (await Promise.all(apis.map((a) => served(a.url, '/v1/scores/:ticker')))).map((n, i) => n - before[i]!);
    expect([...counts].sort()).to.deep.equal([0, 6]);
    const victim = apis[counts.indexOf(6)]!;
    victim.child.kill('SIGKILL');
    await until(() => victim.child.exitCode !== null || victim.child.signalCode !== null, 10_000);
    // The first request after the kill may be the one that finds it down (502); within the next check every request is served.
    await until(async () => (await ok()) && (await ok()) && (await ok()), 10_000, 100);
    for (let i = 0; i < 6; i++) expect(await ok()).to.equal(true);
  });
});

describe('scores fleet up stopped (SIGINT) while it starts', function () {
  this.timeout(300_000);
  const unset = unsetEngines(FLEET_ENGINES);
  if (unset.length > 0) {
    it(`runs on the engines when ${FLEET_ENGINES.join(', ')} are set (unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;

  before(async () => {
    sandbox = await openEnginesSandbox('fleetint', NOW, { kafka: true, readStore: FLEET_READ_STORE });
  });

  after(async () => {
    await sandbox?.drop();
  });

  it('leaves no process behind: the workers that listen and the API process still starting are stopped', async () => {
    const fleet = spawn(process.execPath, [...programArgs('src/app/cli/bin.ts'), 'fleet', 'up', '--api', '2', '--workers', '1', '--port', '0'], {
      cwd: projectRoot(),
      env: sandbox.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    fleet.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => fleet.once('exit', (code) => resolve(code)));
    await until(() => /api 1 starting/.test(err), 120_000, 50);
    const children = readFileSync(`/proc/${fleet.pid}/task/${fleet.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    expect(children.length, 'the worker and the first API process').to.be.at.least(2);

    fleet.kill('SIGINT');
    expect(await exited).to.equal(130);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await until(() => children.every((pid) => !alive(pid)), 40_000, 100);
    expect(err).to.match(/stopped while starting/);
  });
});
