import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { projectRoot } from '../../src/core/paths.js';

/**
 * A serving process writes its log lines asynchronously (src/app/logger.ts, servingLog): none
 * may be lost when the process exits right after logging them, as `scores serve` does on SIGTERM.
 */
describe('The serving log', function () {
  this.timeout(60_000);

  it('writes every line logged before process.exit, in order, as JSON on stdout', () => {
    const script = [
      "const { servingLog } = await import('./src/app/logger.ts');",
      "const log = servingLog('info');",
      "for (let i = 0; i < 5000; i++) log.info({ i }, 'line');",
      'process.exit(0);',
    ].join('\n');
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: projectRoot(), encoding: 'utf8', maxBuffer: 64 << 20 });
    expect(run.status, run.stderr).to.equal(0);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { i: number; msg: string });
    expect(lines.length).to.equal(5000);
    expect(lines.every((l, n) => l.i === n), "in order").to.equal(true);
    expect(lines.every((l) => l.msg === 'line')).to.equal(true);
  });
});
