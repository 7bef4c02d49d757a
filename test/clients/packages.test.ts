import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { startServerProcess } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const root = projectRoot();
const venv = join(root, '.venv-clients');
const NOW = '2019-03-01T23:00:00Z';

/** A command run to its end: its exit code and output (stdout and stderr); throws with the output when it fails. */
function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; allowFailure?: boolean }): Promise<{ code: number | null; out: string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      if (code === 0 || options.allowFailure) resolve({ code, out });
      else reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd}) exited ${code}:\n${out}`));
    }),
  );
}

/** The pinned version of a Python package in clients/python/requirements-test.txt. */
const pin = (name: string) => new RegExp(`^${name}==(\\S+)$`, 'm').exec(readFileSync(join(root, 'clients/python/requirements-test.txt'), 'utf8'))![1]!;

/** What both quickstarts print, checked against the live server's document. */
interface QuickstartOutput {
  api_version: string;
  ticker: string;
  service_score: number;
  history_rows: number;
  first_date: string | null;
  themes: number;
  missing: string;
  credits: number | 'unlimited' | null;
}
function expectQuickstart(out: string, apiVersion: string): QuickstartOutput {
  const line = out.trim().split('\n').at(-1)!;
  const q = JSON.parse(line) as QuickstartOutput;
  expect(q.api_version).to.equal(apiVersion);
  expect(q.ticker).to.equal('AAPL');
  expect(q.service_score).to.be.a('number');
  expect(q.history_rows).to.be.greaterThan(10);
  expect(q.first_date! >= '2019-02-01', `${q.first_date}: the start date was sent`).to.equal(true);
  expect(q.themes).to.be.greaterThan(0);
  expect(q.missing.trim()).to.equal('NotFoundError not_found');
  expect(q.credits).to.be.a('number');
  return q;
}

/** A TypeScript project of one module format with the packed SDK installed, compiled with tsc --strict. */
async function typescriptProject(dir: string, tarball: string, format: 'commonjs' | 'module'): Promise<string> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `quickstart-${format}`, private: true, type: format }));
  const compilerOptions = {
    strict: true,
    target: 'ES2022',
    module: 'node16',
    moduleResolution: 'node16',
    outDir: 'out',
    // @types/node from this checkout (its version is the repository's): the SDK's own types are the installed ones.
    typeRoots: [join(root, 'node_modules/@types')],
    types: ['node'],
    // The quickstart is checked strictly; the declarations it imports were checked when the SDK was built.
    skipLibCheck: true,
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['quickstart.ts'] }));
  copyFileSync(join(root, 'clients/typescript/examples/quickstart.ts'), join(dir, 'quickstart.ts'));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], { cwd: dir });
  await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.', '--strict'], { cwd: dir });
  return readFileSync(join(dir, 'out/quickstart.js'), 'utf8');
}

/**
 * The SDKs as a stranger gets them: the tarball `npm pack` makes and the wheel `python -m build`
 * makes, each installed into a fresh project (CommonJS and ESM TypeScript, a Python venv), its
 * quickstart type-checked strictly (tsc --strict, mypy --strict) and run against a live server
 * (node dist/src/app/main.js with the demo data on a temp data dir).
 */
describe('The SDK packages, installed into fresh projects, run their quickstarts against a live server', function () {
  this.timeout(300_000);
  const dir = tempDir('scores-packages-');
  let server: { url: string; stop(): Promise<void> } | undefined;
  let env: NodeJS.ProcessEnv = {};
  let apiVersion = '';
  // Everything that needs no server starts at once (builds, installs, compiles); each test awaits its part.
  let tarball: Promise<string>;
  let projects: Promise<{ cjs: string; esm: string }>;
  let python: Promise<{ wheel: string; sdist: string; fresh: string } | null>;

  before(async () => {
    tarball = (async () => {
      await run('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], { cwd: join(root, 'clients/typescript') });
      return join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
    })();
    projects = tarball.then(async (t) => {
      const [cjs, esm] = await Promise.all([typescriptProject(join(dir, 'cjs'), t, 'commonjs'), typescriptProject(join(dir, 'esm'), t, 'module')]);
      return { cjs, esm };
    });
    python = buildPython(dir);
    // Mocha sees a rejection when a test awaits it; until then none may go unhandled.
    for (const p of [tarball, projects, python]) p.catch(() => undefined);
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const started = await startServerProcess(testEnv(dataDir, NOW), 240_000);
    server = started;
    env = { ...process.env, SCORES_API_KEY: demoKey(dataDir, 'quant'), SCORES_BASE_URL: started.url };
    apiVersion = ((await (await fetch(`${started.url}/openapi.json`)).json()) as { info: { version: string } }).info.version;
  });
  after(async () => {
    await server?.stop();
    await Promise.allSettled([tarball, projects, python]);
    rmSync(dir, { recursive: true, force: true });
  });

  describe('TypeScript (npm pack)', () => {
    it('a CommonJS project requires it: tsc --strict compiles the quickstart to require(), which runs against the server', async () => {
      const compiled = (await projects).cjs;
      expect(compiled).to.include('require("@scores/client")');
      const r = await run(process.execPath, ['out/quickstart.js'], { cwd: join(dir, 'cjs'), env });
      expectQuickstart(r.out, apiVersion);
    });

    it('an ESM project imports it: tsc --strict keeps the import, which runs against the server', async () => {
      const compiled = (await projects).esm;
      expect(compiled).to.match(/^import .* from '@scores\/client';$/m);
      const r = await run(process.execPath, ['out/quickstart.js'], { cwd: join(dir, 'esm'), env });
      expectQuickstart(r.out, apiVersion);
    });

    it('carries its types, licence, changelog and the API version, and declares its build tools', async () => {
      const listing = (await run('tar', ['tzf', await tarball], { cwd: dir })).out.split('\n');
      for (const f of ['package/dist/cjs/index.js', 'package/dist/cjs/index.d.ts', 'package/dist/cjs/package.json', 'package/dist/esm/index.js', 'package/dist/esm/index.d.ts', 'package/LICENSE', 'package/CHANGELOG.md', 'package/README.md'])
        expect(listing, f).to.include(f);
      const manifest = JSON.parse(readFileSync(join(root, 'clients/typescript/package.json'), 'utf8')) as Record<string, any>;
      expect(manifest['license']).to.equal('MIT');
      expect(manifest['version']).to.equal(apiVersion);
      expect(Object.keys(manifest['devDependencies'] as object)).to.include('typescript');
      expect(manifest['exports']['.']['require']['default']).to.equal('./dist/cjs/index.js');
      expect(manifest['exports']['.']['import']['default']).to.equal('./dist/esm/index.js');
    });
  });

  describe('Python (python -m build)', () => {
    let built: { wheel: string; sdist: string; fresh: string };
    before(async function () {
      const b = await python;
      if (!b) {
        console.log('      (skipped: no python3 with its venv module here, so the Python package is not built nor installed)');
        this.skip();
      }
      built = b!;
    });

    it('builds a wheel and an sdist with the licence, the changelog and py.typed', async () => {
      const sdist = (await run('tar', ['tzf', built.sdist], { cwd: dir })).out;
      for (const f of ['LICENSE', 'CHANGELOG.md', 'src/scores_client/py.typed', 'src/scores_client/_operations.py']) expect(sdist, f).to.include(f);
      const wheel = (await run(join(venv, 'bin/python'), ['-m', 'zipfile', '-l', built.wheel], { cwd: dir })).out;
      for (const f of ['scores_client/py.typed', 'scores_client/_operations.py', 'licenses/LICENSE']) expect(wheel, f).to.include(f);
    });

    it('installs into a fresh venv, where the quickstart runs against the server and returns a DataFrame', async () => {
      const r = await run(join(built.fresh, 'bin/python'), ['quickstart.py'], { cwd: dir, env });
      const q = expectQuickstart(r.out, apiVersion) as QuickstartOutput & { date_dtype: string };
      expect(q.date_dtype).to.equal('datetime64[ns]');
    });

    it('passes mypy --strict against the installed package', async () => {
      // From the temp dir: clients/python's own mypy settings (its src, its tests) stay out.
      const r = await run(join(venv, 'bin/mypy'), ['--strict', '--python-executable', join(built.fresh, 'bin/python'), '--cache-dir=/dev/null', 'quickstart.py'], { cwd: dir, allowFailure: true });
      expect(r.out).to.include('Success: no issues found in 1 source file');
      expect(r.code).to.equal(0);
    });

    it('has a typed method per operation of the served document, as installed', async () => {
      const r = await run(join(built.fresh, 'bin/python'), [join(root, 'clients/python/tests/check_operations.py'), `${server!.url}/openapi.json`], { cwd: dir, allowFailure: true });
      expect(r.out).to.match(/^\d+ operations, each with a typed method$/m);
    });
  });
});

/**
 * The wheel and the sdist (`python -m build`: the sdist, then the wheel from it), built with the
 * pinned tools of .venv-clients (made here when missing: scripts/python-clients.sh --setup), and
 * the wheel installed with its pandas extra into a fresh venv; null without python3 and its venv
 * module.
 */
async function buildPython(dir: string): Promise<{ wheel: string; sdist: string; fresh: string } | null> {
  const hasPython = await run('python3', ['-c', 'import venv, ensurepip'], { cwd: root, allowFailure: true }).catch(() => ({ code: 1 }));
  if (hasPython.code !== 0) return null;
  const out = join(dir, 'py-dist');
  const fresh = join(dir, 'venv');
  const made = run('python3', ['-m', 'venv', fresh], { cwd: dir });
  if (!existsSync(join(venv, 'bin/mypy'))) await run(join(root, 'scripts/python-clients.sh'), ['--setup'], { cwd: root });
  await run(join(venv, 'bin/python'), ['-m', 'build', '--no-isolation', '--outdir', out, '.'], { cwd: join(root, 'clients/python') });
  const files = readdirSync(out);
  const wheel = join(out, files.find((f) => f.endsWith('.whl'))!);
  await made;
  await run(join(fresh, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', `${wheel}[pandas]`, `pandas-stubs==${pin('pandas-stubs')}`], { cwd: dir });
  copyFileSync(join(root, 'clients/python/examples/quickstart.py'), join(dir, 'quickstart.py'));
  return { wheel, sdist: join(out, files.find((f) => f.endsWith('.tar.gz'))!), fresh };
}
