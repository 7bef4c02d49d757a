/**
 * The console of a started server. With stdout piped (not a terminal) it carries JSON lines only,
 * and the health checks (/healthz, /readyz, /metrics) are not logged at info: the calls are. At
 * debug their lines are there (in-process server, its logger writing into a stream).
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../src/app/logger.js';
import { spawnCli, until } from '../support/processes.js';
import { startTestServer, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-04-10T12:00:00Z';
const HEALTH = ['/healthz', '/readyz', '/metrics'];

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      expect(() => JSON.parse(l) as unknown, `a JSON line: ${l}`).to.not.throw();
      return JSON.parse(l) as Record<string, unknown>;
    });

describe('The console of a started server', function () {
  this.timeout(240_000);

  it('writes JSON lines to a piped stdout, with the calls at info and no health check', async () => {
    const dir = tempDir('scores-console-');
    const { child, done } = spawnCli(['serve'], testEnv(dir, NOW, { LOG_LEVEL: 'info', SCORES_DEMO: 'off' }));
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    try {
      await until(() => /"msg":"listening"/.test(stdout), 120_000);
      const url = /"url":"(http:\/\/[^"]+)"/.exec(stdout)![1]!;
      for (const path of [...HEALTH, '/v1/meta', ...HEALTH]) await (await fetch(`${url}${path}`)).arrayBuffer();
      await until(() => /"route":"\/v1\/meta"/.test(stdout), 10_000);
    } finally {
      child.kill('SIGTERM');
      await done;
      rmSync(dir, { recursive: true, force: true });
    }
    const lines = jsonLines(stdout);
    const requests = lines.filter((l) => l['msg'] === 'request');
    expect(requests.map((l) => [l['level'], l['route']])).to.deep.equal([[30, '/v1/meta']]);
    expect(lines.map((l) => l['msg'])).to.include('listening');
  });

  it('logs the health checks at debug', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const server = await startTestServer({ now: NOW, env: { SCORES_DEMO: 'off' }, log: createLogger('debug', out) });
    try {
      for (const path of HEALTH) await (await fetch(`${server.url}${path}`)).arrayBuffer();
      await until(() => HEALTH.every((p) => text.includes(`"route":"${p}"`)), 10_000);
    } finally {
      await server.stop();
    }
    const health = jsonLines(text).filter((l) => l['msg'] === 'request');
    expect(health.map((l) => [l['level'], l['route']])).to.deep.equal(HEALTH.map((p) => [20, p]));
  });
});
