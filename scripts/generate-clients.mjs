#!/usr/bin/env node
// Regenerates the client SDKs' generated code from the served OpenAPI document (`npm run clients:generate`):
//   clients/openapi.json                                  the document a server serves at /openapi.json
//   clients/typescript/src/generated/schema.ts            openapi-typescript
//   clients/python/src/scores_client/models.py            datamodel-code-generator (options: clients/python/pyproject.toml)
//   clients/typescript/src/generated/operations.ts        a typed method per operation (scripts/client-methods.mjs)
//   clients/python/src/scores_client/_operations.py       the same in Python, and the list answers' to_pandas()
//
//   node scripts/generate-clients.mjs                     build, start a server (no demo data), write the files
//   node scripts/generate-clients.mjs --check             the same into a temp dir; exit 1 naming each stale file
//     --url URL            take the document from a running server (started with PUBLIC_BASE_URL below)
//     --against DIR        compare with the files under DIR instead of this checkout
//     --no-python          leave models.py out (no .venv-clients yet); scripts/python-clients.sh checks it
// The document names its server: the generator's is always PUBLIC_BASE_URL, so the output does not
// depend on the port a server happened to get.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pythonOperations, typescriptOperations } from './client-methods.mjs';

export const PUBLIC_BASE_URL = 'https://api.example.com';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FILES = {
  document: 'clients/openapi.json',
  types: 'clients/typescript/src/generated/schema.ts',
  operations: 'clients/typescript/src/generated/operations.ts',
  models: 'clients/python/src/scores_client/models.py',
  pyOperations: 'clients/python/src/scores_client/_operations.py',
};
const venvBin = join(root, '.venv-clients', 'bin');

function parseArgs(argv) {
  const args = { check: false, url: null, against: root, python: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') args.check = true;
    else if (a === '--url') args.url = argv[++i];
    else if (a === '--against') args.against = argv[++i];
    else if (a === '--no-python') args.python = false;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** A server process on a temp data dir, no demo: its document does not depend on data. */
async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'scores-generate-'));
  const env = { ...process.env, SCORES_DATA_DIR: dir, SCORES_DEMO: 'off', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SCORES_EXPORTS_SCHEDULE: 'off', PUBLIC_BASE_URL };
  // The start banner ("listening on URL") is on stderr; stdout is the JSON log stream, silent here.
  const child = spawn(process.execPath, ['dist/src/app/main.js'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${out}`)));
  });
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The document without the reference's `x-codeSamples`: they are documentation made from the SDKs
 * (scripts/render-docs.mjs), so the SDKs are not generated from them.
 */
function withoutCodeSamples(doc) {
  for (const ops of Object.values(doc.paths)) for (const op of Object.values(ops)) delete op['x-codeSamples'];
  return doc;
}

/** Writes the generated files under `out` from the document at `url`. */
async function generate(url, out, python) {
  const res = await fetch(`${url}/openapi.json`);
  if (!res.ok) throw new Error(`GET ${url}/openapi.json: ${res.status}`);
  const doc = withoutCodeSamples(await res.json());
  const servers = JSON.stringify(doc.servers);
  if (servers !== JSON.stringify([{ url: PUBLIC_BASE_URL }])) throw new Error(`the server's document names ${servers}: start it with PUBLIC_BASE_URL=${PUBLIC_BASE_URL}`);
  for (const f of Object.values(FILES)) mkdirSync(dirname(join(out, f)), { recursive: true });
  writeFileSync(join(out, FILES.document), `${JSON.stringify(doc, null, 2)}\n`);
  execFileSync(process.execPath, [join(root, 'node_modules/openapi-typescript/bin/cli.js'), join(out, FILES.document), '-o', join(out, FILES.types), '--silent'], { stdio: 'inherit' });
  writeFileSync(join(out, FILES.operations), typescriptOperations(doc));
  // The methods need no Python tool: they are written whether or not the models are.
  writeFileSync(join(out, FILES.pyOperations), pythonOperations(doc));
  if (!python) return [FILES.document, FILES.types, FILES.operations, FILES.pyOperations];
  const codegen = join(venvBin, 'datamodel-codegen');
  if (!existsSync(codegen)) throw new Error(`${codegen} is missing: run scripts/python-clients.sh --setup (or pass --no-python)`);
  // Run from clients/python so that it reads its options from pyproject.toml ([tool.datamodel-codegen]).
  execFileSync(codegen, ['--input', join(out, FILES.document), '--output', join(out, FILES.models)], { cwd: join(root, 'clients/python'), stdio: 'inherit' });
  return Object.values(FILES);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let server = null;
  if (!args.url) {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', process.stderr, process.stderr] });
    server = await startServer();
  }
  const out = args.check ? mkdtempSync(join(tmpdir(), 'scores-clients-')) : root;
  try {
    const written = await generate(args.url ?? server.url, out, args.python);
    if (!args.check) {
      process.stdout.write(`generated ${written.join(', ')}\n`);
      return;
    }
    const stale = written.filter((f) => !existsSync(join(args.against, f)) || readFileSync(join(args.against, f), 'utf8') !== readFileSync(join(out, f), 'utf8'));
    if (stale.length > 0) {
      process.stderr.write(`stale generated code (run npm run clients:generate and commit): ${stale.join(', ')}\n`);
      process.exitCode = 1;
    } else process.stdout.write(`up to date: ${written.join(', ')}\n`);
  } finally {
    await server?.stop();
    if (args.check) rmSync(out, { recursive: true, force: true });
  }
}

await main();
