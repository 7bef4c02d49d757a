import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { passThrough } from '../../src/app/fleet/fleet.js';

describe("The fleet passes on its members' warnings, errors and exits", () => {
  it('passes warn and error records and lines that are no log record (a trace), not info; then the exit', async () => {
    const script = [
      `console.error(JSON.stringify({ level: 30, msg: 'served' }))`,
      `console.error(JSON.stringify({ level: 40, msg: 'store slow' }))`,
      `console.error(JSON.stringify({ level: 50, msg: 'projection failed' }))`,
      `console.error('TypeError: boom')`,
      `process.exitCode = 3`,
    ].join(';');
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    const lines: string[] = [];
    passThrough(child, 'api', (line) => lines.push(line));
    await once(child, 'close');
    const who = `[api (pid ${child.pid})]`;
    expect(lines).to.deep.equal([
      `${who} {"level":40,"msg":"store slow"}`,
      `${who} {"level":50,"msg":"projection failed"}`,
      `${who} TypeError: boom`,
      `${who} exited (3)`,
    ]);
  });
});
