// The closing line of .ci/run: mocha's and pytest's counts summed as "N passed, N failed, N skipped"
// (mocha's "pending" are the real-engine suites without a server; pytest's "skipped" likewise).
import { readFileSync } from 'node:fs';

const totals = { passed: 0, failed: 0, skipped: 0 };
const add = (key, text) => (totals[key] += text ? Number(text) : 0);
for (const file of process.argv.slice(2)) {
  const log = readFileSync(file, 'utf8');
  const mocha = log.match(/^\s*(\d+) passing.*$/m);
  if (mocha) {
    add('passed', mocha[1]);
    add('failed', log.match(/^\s*(\d+) failing/m)?.[1]);
    add('skipped', log.match(/^\s*(\d+) pending/m)?.[1]);
  }
  for (const line of log.split('\n').filter((l) => /^(=+ )?\d+ (passed|failed)\b.* in [\d.]+s/.test(l))) {
    add('passed', line.match(/(\d+) passed/)?.[1]);
    add('failed', line.match(/(\d+) failed/)?.[1]);
    add('skipped', line.match(/(\d+) skipped/)?.[1]);
  }
}
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 ? 1 : 0);
