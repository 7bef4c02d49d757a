/**
 * The reference's SDK code samples (issue 45 item 3): every operation of the served /openapi.json
 * carries a Python SDK and a TypeScript SDK sample after its curl one (`x-codeSamples`, written by
 * scripts/render-docs.mjs), and each runs against a live demo server with a quant key: the Python
 * ones with the .venv-clients interpreter and clients/python/src on PYTHONPATH, the TypeScript ones
 * with tsx and `@scores/client` resolved to clients/typescript/src; each is type-checked too (mypy
 * --strict, tsc --strict). One process per language runs every sample of it in turn and reports
 * each one's outcome. A sample passes when it runs to the end and prints something; a documented
 * 4xx raised as the SDK's error passes only where the curl sample of the same operation gets that
 * same status (webhook 7 and the example bundle do not exist on a demo server).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../../src/core/paths.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

const root = projectRoot();
const venvPython = join(root, '.venv-clients/bin/python');
const TS_PACKAGE = (JSON.parse(readFileSync(join(root, 'clients/typescript/package.json'), 'utf8')) as { name: string }).name;

type Sample = { lang: string; label: string; source: string };
type Op = { responses: Record<string, unknown>; 'x-codeSamples'?: Sample[] };
interface Outcome {
  key: string;
  ok: boolean;
  status: number | null;
  error?: string;
  printed: number;
}

/** Runs a program to its end (asynchronously: the server answering it runs in this process). */
function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ status: number | null; out: string; err: string }> {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, out, err })));
}

const outcomesOf = (out: string): Outcome[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('@@SAMPLE '))
    .map((l) => JSON.parse(l.slice('@@SAMPLE '.length)) as Outcome);

/** Each sample exec'd in a fresh namespace, its prints captured, a ScoresError's status reported. */
const PYTHON_RUNNER = `
import contextlib, io, json, sys, traceback
from scores_client import ScoresError

for key, source in json.load(open(sys.argv[1])):
    printed = io.StringIO()
    outcome = {"key": key, "ok": True, "status": None}
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(source, key, "exec"), {"__name__": "__main__"})
    except ScoresError as e:
        outcome.update(ok=False, status=getattr(e, "status", None), error=f"{type(e).__name__}: {e}")
    except BaseException:
        outcome.update(ok=False, error=traceback.format_exc())
    outcome["printed"] = len(printed.getvalue().strip())
    print("@@SAMPLE " + json.dumps(outcome), flush=True)
`;

/** Each sample a module of its own, imported in turn; console.log captured, a ScoresError's status reported. */
const TYPESCRIPT_RUNNER = `
import { readFileSync } from 'node:fs';
import { ScoresError } from '${TS_PACKAGE}';

const samples = JSON.parse(readFileSync('samples.json', 'utf8')) as [string, string][];
const log = console.log;
for (const [key, file] of samples) {
  let printed = '';
  console.log = (...args: unknown[]) => { printed += args.map(String).join(' ') + '\\n'; };
  const outcome: Record<string, unknown> = { key, ok: true, status: null };
  try {
    await import('./' + file);
  } catch (e) {
    const status = (e as { status?: unknown }).status;
    Object.assign(outcome, { ok: false, status: e instanceof ScoresError && typeof status === 'number' ? status : null, error: e instanceof ScoresError ? \`\${e.constructor.name}: \${e.message}\` : String((e as Error)?.stack ?? e) });
  }
  console.log = log;
  outcome.printed = printed.trim().length;
  log('@@SAMPLE ' + JSON.stringify(outcome));
}
`;

describe('SDK code samples in the reference (Python SDK, TypeScript SDK), run against a live demo server', function () {
  this.timeout(180_000);
  let server: TestServer;
  let key = '';
  let dir = '';
  let ops: { name: string; op: Op; samples: Record<string, string>; curlStatus: number }[] = [];

  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
    key = demoKey(server.dir, 'quant');
    dir = mkdtempSync(join(tmpdir(), 'scores-sdk-samples-'));
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
    ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        name: `${method.toUpperCase()} ${path}`,
        op,
        samples: Object.fromEntries((op['x-codeSamples'] ?? []).map((s) => [s.label, s.source.replaceAll(server.running.baseUrl, server.url)])),
        curlStatus: 0,
      })),
    );
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gives every operation a Python SDK and a TypeScript SDK sample after curl: the SDK, this server, the method of its operationId', () => {
    expect(ops.length).to.be.greaterThan(20);
    for (const { name, op, samples } of ops) {
      expect(op['x-codeSamples']!.map((s) => `${s.lang}/${s.label}`), name).to.deep.equal(['Shell/curl', 'Python/Python SDK', 'TypeScript/TypeScript SDK']);
      expect(samples['Python SDK'], name).to.include('from scores_client import ScoresClient').and.include(`ScoresClient(base_url="${server.url}")`).and.match(/^print\(/m);
      expect(samples['TypeScript SDK'], name).to.include(`import { ScoresClient } from '${TS_PACKAGE}';`).and.include(`new ScoresClient({ baseUrl: '${server.url}' })`).and.match(/^console\.log\(/m);
      expect(samples['Python SDK']! + samples['TypeScript SDK']!, name).to.not.match(/\{[a-z_]+\}/);
    }
    const history = ops.find((o) => o.name === 'GET /v1/scores/{ticker}/history')!;
    expect(history.samples['Python SDK']).to.include('client.get_score_history("AAPL")');
    expect(history.samples['TypeScript SDK']).to.include("scores.getScoreHistory('AAPL')");
  });

  describe('each sample, run', () => {
    before(async function () {
      // The status the curl sample of each operation gets (as code-samples.test.ts runs it): the one
      // 4xx an SDK sample of the operation may end with.
      for (const o of ops) {
        const text = o.samples.curl!.replace(/\\\n/g, ' ').replace(/\$SCORES_API_KEY/g, key);
        const method = /-X (\w+)/.exec(text)?.[1] ?? 'GET';
        const url = /"(https?:\/\/[^"]+)"/.exec(text)![1]!;
        const headers = Object.fromEntries([...text.matchAll(/-H "([^:]+): ([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
        const body = /-d '((?:[^']|'\\'')*)'/.exec(text)?.[1]?.replace(/'\\''/g, "'");
        o.curlStatus = (await fetch(url, { method, headers, body })).status;
      }
    });

    /** Every sample passed: ran to its end and printed, or got the 4xx its operation's curl sample gets. */
    function check(label: string, outcomes: Outcome[], runner: { status: number | null; out: string; err: string }) {
      expect(outcomes.map((o) => o.key), `${runner.err}\n${runner.out}`).to.deep.equal(ops.map((o) => o.name));
      const failed = outcomes.flatMap((o) => {
        const op = ops.find((x) => x.name === o.key)!;
        if (o.ok) return o.printed > 0 ? [] : [`${o.key}: printed nothing`];
        if (o.status !== null && o.status >= 400 && o.status < 500 && o.status === op.curlStatus && String(o.status) in op.op.responses) return [];
        return [`${o.key}: ${o.error} (curl: ${op.curlStatus})`];
      });
      expect(failed, `${label} samples failed`).to.deep.equal([]);
      expect(runner.status, runner.err).to.equal(0);
      expect(outcomes.filter((o) => o.ok).length, `${label}: most samples succeed`).to.be.greaterThan(15);
    }

    describe('the Python SDK samples', () => {
      let work = '';
      before(function () {
        // .ci/run sets it up in the background before npm test (scripts/python-clients.sh --setup).
        if (!existsSync(venvPython)) {
          console.log('      (skipped: no .venv-clients; scripts/python-clients.sh --setup makes it, with Python 3.11 and venv)');
          this.skip();
        }
        work = join(dir, 'python');
        mkdirSync(work);
        ops.forEach((o, i) => writeFileSync(join(work, `sample${i}.py`), o.samples['Python SDK']!));
        writeFileSync(join(work, 'samples.json'), JSON.stringify(ops.map((o) => [o.name, o.samples['Python SDK']])));
        writeFileSync(join(work, 'runner.py'), PYTHON_RUNNER);
      });

      it('each type-checks against clients/python/src (mypy --strict)', async () => {
        const files = ops.map((_o, i) => `sample${i}.py`);
        const r = await run(join(root, '.venv-clients/bin/mypy'), ['--strict', '--cache-dir=/dev/null', '--python-executable', venvPython, ...files], work, { MYPYPATH: join(root, 'clients/python/src') });
        expect(r.status, r.out + r.err).to.equal(0);
      });

      it('each runs (.venv-clients, clients/python/src on PYTHONPATH)', async () => {
        const pythonPath = [join(root, 'clients/python/src'), process.env.PYTHONPATH].filter(Boolean).join(delimiter);
        const r = await run(venvPython, ['runner.py', 'samples.json'], work, { SCORES_API_KEY: key, PYTHONPATH: pythonPath });
        check('Python SDK', outcomesOf(r.out), r);
      });
    });

    /** A project with the TypeScript samples, a file each, and the package as installed but its source in place of dist/. */
    function typescriptProject(): string {
      const work = join(dir, 'typescript');
      if (existsSync(work)) return work;
      const pkg = join(work, 'node_modules', ...TS_PACKAGE.split('/'));
      mkdirSync(pkg, { recursive: true });
      writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: TS_PACKAGE, type: 'module', exports: { '.': { types: './src/index.ts', default: './src/index.ts' } } }));
      symlinkSync(join(root, 'clients/typescript/src'), join(pkg, 'src'), 'dir');
      writeFileSync(join(work, 'package.json'), JSON.stringify({ type: 'module', private: true }));
      ops.forEach((o, i) => writeFileSync(join(work, `sample${i}.ts`), o.samples['TypeScript SDK']!));
      writeFileSync(join(work, 'samples.json'), JSON.stringify(ops.map((o, i) => [o.name, `sample${i}.ts`])));
      writeFileSync(join(work, 'runner.ts'), TYPESCRIPT_RUNNER);
      const compilerOptions = { strict: true, noEmit: true, target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: true, typeRoots: [join(root, 'node_modules/@types')], types: ['node'] };
      writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ops.map((_o, i) => `sample${i}.ts`) }));
      return work;
    }

    it('every TypeScript SDK sample type-checks against the SDK (tsc --strict)', async () => {
      const r = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], typescriptProject(), {});
      expect(r.status, r.out + r.err).to.equal(0);
    });

    it(`every TypeScript SDK sample (tsx, ${TS_PACKAGE} resolved to clients/typescript/src)`, async () => {
      const tsx = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
      const r = await run(process.execPath, ['--import', tsx, 'runner.ts'], typescriptProject(), { SCORES_API_KEY: key });
      check('TypeScript SDK', outcomesOf(r.out), r);
    });
  });
});
