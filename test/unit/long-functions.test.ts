import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { tempDir } from '../support/server.js';

/** `scripts/long-functions.mjs` (run by `npm run lint`) on miniature trees. */
const SCRIPT = join(projectRoot(), 'scripts', 'long-functions.mjs');

const fn = (name: string, lines: number) => `export function ${name}() {\n${'  void 0;\n'.repeat(lines - 2)}}\n`;

function run(files: Record<string, string>) {
  const dir = tempDir('scores-long-functions-');
  try {
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(join(dir, file, '..'), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const out = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
    return { status: out.status, stdout: out.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('scripts/long-functions.mjs', () => {
  it('passes a tree whose functions are all 80 lines or fewer, listing none', () => {
    const { status, stdout } = run({ 'src/a.ts': fn('a', 80) + fn('b', 12) });
    expect(status).to.equal(0);
    expect(stdout).to.contain('0 function(s) over 80 lines');
  });

  it('fails on one function over 120 lines, naming its file, line and name', () => {
    const { status, stdout } = run({ 'commands/x/x.handler.ts': `const k = 1;\n${fn('handleEverything', 121)}` });
    expect(status).to.equal(1);
    expect(stdout).to.contain(' 121  commands/x/x.handler.ts:2  handleEverything');
    expect(stdout).to.contain('1 over 120');
  });

  it('allows seven functions of 81-120 lines and fails on the eighth', () => {
    const seven = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`queries/q${i}/q.query.ts`, fn(`q${i}`, 81)]));
    expect(run(seven).status).to.equal(0);
    const eight = run({ ...seven, 'infra/x/adapter.ts': `export const go = () => {\n${'  void 0;\n'.repeat(79)}};\n` });
    expect(eight.status).to.equal(1);
    expect(eight.stdout).to.contain('81  infra/x/adapter.ts:1  go');
  });

  it('counts a nested function towards the one that holds it, and skips test files and generated code', () => {
    const outer = `export function outer() {\n  const inner = () => {\n${'    void 0;\n'.repeat(70)}  };\n${'  void 0;\n'.repeat(60)}  return inner;\n}\n`;
    const { stdout } = run({
      'src/outer.ts': outer,
      'test/unit/big.test.ts': fn('describeAll', 300),
      'src/app/http/generated/routes.ts': fn('RegisterRoutes', 300),
    });
    expect(stdout).to.match(/ 135 {2}src\/outer\.ts:1 {2}outer/);
    expect(stdout).not.to.contain('describeAll');
    expect(stdout).not.to.contain('RegisterRoutes');
  });
});
