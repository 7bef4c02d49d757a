#!/usr/bin/env node
// The functions a V8 CPU profile (`node --cpu-prof`) spent its time in: self time per function, then
// time including callees (each function once per sample), as shares of the busy (non-idle) time.
//   node scripts/cpuprofile-top.mjs FILE.cpuprofile [--last SECONDS] [--top N]
// --last keeps the profile's last seconds only (the load, not the start-up); docs/benchmarks.md,
// "The metered path", profiles a metered call with it.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i < 0 ? fallback : Number(args[i + 1]);
};
const file = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (!file) {
  process.stderr.write('usage: node scripts/cpuprofile-top.mjs FILE.cpuprofile [--last SECONDS] [--top N]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const top = option('--top', 30);
const last = option('--last', 0) * 1e6;

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
const name = ({ functionName, url, lineNumber }) => `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;

const self = new Map();
const total = new Map();
let busy = 0;
let t = profile.startTime;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  t += dt;
  if (last && t < profile.endTime - last) return;
  if (nodes.get(id).callFrame.functionName === '(idle)') return;
  busy += dt;
  const key = name(nodes.get(id).callFrame);
  self.set(key, (self.get(key) ?? 0) + dt);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const k = name(nodes.get(at).callFrame);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
});

const share = (us) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const list = (title, m) => {
  process.stdout.write(`${title}\n`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${share(us)}  ${k}\n`);
};
process.stdout.write(`busy ${(busy / 1e6).toFixed(2)} s\n`);
list('-- self time', self);
list('-- including callees', total);
