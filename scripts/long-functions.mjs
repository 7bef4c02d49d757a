#!/usr/bin/env node
// Lists the hand-written functions longer than 80 lines and fails (`npm run lint`) when one runs over
// 120 or when 8 or more run over 80. It reads every hand-written source: the service, the scripts, the
// bench, soak and test support code, but not the test files themselves (a describe block is a list, not
// a function to read top-down), nor generated routes or build output. A function's lines run from its
// first to its last, nested functions included, as a reader scrolls them.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOTS = ['src', 'commands', 'queries', 'projections', 'infra', 'scripts', 'bin', 'test/bench', 'test/support', 'test/soak'];
const SKIP = /(^|\/)(generated|node_modules)(\/|$)/;
const WARN = 80;
const MAX = 120;
const MAX_OVER_WARN = 7;

function* sourceFiles(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (SKIP.test(path)) continue;
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|mjs|js)$/.test(path) && !path.endsWith('.d.ts')) yield path;
  }
}

function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  if (parent && ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

export const BOUNDS = { WARN, MAX, MAX_OVER_WARN };

export function longFunctions(root = process.cwd()) {
  const found = [];
  for (const top of ROOTS) {
    if (!existsSync(join(root, top))) continue;
    for (const file of sourceFiles(join(root, top))) {
      const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node) => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
          const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
          const lines = end - start + 1;
          if (lines > WARN) found.push({ file: relative(root, file), line: start + 1, name: nameOf(node, sf), lines });
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
  }
  return found.sort((a, b) => b.lines - a.lines);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = longFunctions(process.argv[2] ?? process.cwd());
  for (const f of found) console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
  const over = found.filter((f) => f.lines > MAX);
  console.log(`${found.length} function(s) over ${WARN} lines (at most ${MAX_OVER_WARN} allowed), ${over.length} over ${MAX} (none allowed)`);
  if (over.length > 0 || found.length > MAX_OVER_WARN) process.exit(1);
}
