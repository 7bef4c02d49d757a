#!/usr/bin/env node
// Builds (tsoa routes, the docs' guides and samples, tsc) when any source is newer than the last build; otherwise returns at once.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const inputs = ['src', 'commands', 'docs', 'scripts/render-docs.mjs', 'clients/openapi.json', 'queries', 'projections', 'infra', 'test', 'tsoa.json', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];

function newest(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = 0;
  for (const name of readdirSync(path)) {
    if (name === 'generated' || name === 'node_modules') continue;
    max = Math.max(max, newest(join(path, name)));
  }
  return max;
}

export function buildIfNeeded() {
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  const changed = Math.max(...inputs.map((p) => newest(join(root, p))));
  if (built >= changed) return false;
  process.stderr.write('building (tsoa routes + tsc)…\n');
  execSync('npm run --silent build', { cwd: root, stdio: ['ignore', process.stderr, process.stderr] });
  writeFileSync(stamp, new Date().toISOString());
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) buildIfNeeded();
