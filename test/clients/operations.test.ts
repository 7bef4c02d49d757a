import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../src/core/paths.js';
import { startTestServer, type TestServer } from '../support/server.js';

const root = projectRoot();
const venvPython = join(root, '.venv-clients/bin/python');

interface Operation {
  id: string;
  method: string;
  path: string;
  pathParams: string[];
}
interface Document {
  paths: Record<string, Record<string, { operationId?: string }>>;
}

/** The operations of an OpenAPI document. */
function operationsOf(doc: Document): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    ['get', 'post', 'put', 'patch', 'delete']
      .filter((m) => item[m])
      .map((m) => ({ id: item[m]!.operationId ?? `(no operationId: ${m} ${path})`, method: m.toUpperCase(), path, pathParams: [...path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!) })),
  );
}

/** The TypeScript SDK's `ScoresClient`, as the compiler sees it. */
function typescriptClient(): { checker: ts.TypeChecker; type: ts.Type } {
  const index = join(root, 'clients/typescript/src/index.ts');
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'clients/typescript/tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const program = ts.createProgram([index], { ...parsed.options, noEmit: true });
  const checker = program.getTypeChecker();
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(index)!)!);
  const symbol = exported.find((s) => s.name === 'ScoresClient')!;
  return { checker, type: checker.getDeclaredTypeOfSymbol(symbol) };
}

/**
 * Why an operation has no typed method on the TypeScript client, or null: a method named after its
 * operationId that calls that path with that method, its path parameters among its parameters, and
 * a promise of a typed value (never any or unknown).
 */
function typescriptProblem(client: { checker: ts.TypeChecker; type: ts.Type }, op: Operation): string | null {
  const prop = client.type.getProperty(op.id);
  const decl = prop?.valueDeclaration;
  if (!prop || !decl || !ts.isMethodDeclaration(decl)) return 'no method';
  if (!decl.getText().includes(`this.api.${op.method}('${op.path}'`)) return `does not call ${op.method} ${op.path}`;
  const signature = client.checker.getSignaturesOfType(client.checker.getTypeOfSymbol(prop), ts.SignatureKind.Call)[0]!;
  const names = signature.parameters.map((p) => p.name);
  const missing = op.pathParams.filter((p) => !names.includes(p));
  if (missing.length) return `no parameter for ${missing.join(', ')}`;
  const untyped = signature.parameters.filter((p) => client.checker.getTypeOfSymbol(p).flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown));
  if (untyped.length) return `untyped parameters ${untyped.map((p) => p.name).join(', ')}`;
  const returned = client.checker.typeToString(signature.getReturnType(), undefined, ts.TypeFormatFlags.NoTruncation);
  const inner = /^Promise<(.*)>$/s.exec(returned)?.[1];
  if (!inner || inner === 'any' || inner === 'unknown' || inner === 'Response') return `returns ${returned}`;
  return null;
}

/** Runs the Python check (asynchronously: the server answering it runs in this process). */
function pythonCheck(source: string): Promise<{ status: number | null; out: string }> {
  const child = spawn(venvPython, ['tests/check_operations.py', source], { cwd: join(root, 'clients/python'), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, out })));
}

/** A document with one operation more than the SDKs know. */
const withExtraOperation = (doc: Document): Document => ({ ...doc, paths: { ...doc.paths, '/v1/portfolios/{portfolio_id}': { get: { operationId: 'getPortfolio' } } } });

describe('Every operation of /openapi.json has a typed method in both SDKs', function () {
  this.timeout(120_000);
  let server: TestServer;
  let doc: Document;
  let client: ReturnType<typeof typescriptClient>;
  before(async () => {
    server = await startTestServer({ now: '2019-03-01T23:00:00Z', env: { SCORES_DEMO: 'off' } });
    doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Document;
    client = typescriptClient();
  });
  after(() => server?.stop());

  it('the TypeScript client has one per operation, named after its operationId, calling its path, typed', () => {
    const ops = operationsOf(doc);
    expect(ops.length).to.be.greaterThan(20);
    const problems = ops.map((op) => [op.id, typescriptProblem(client, op)]).filter(([, p]) => p !== null);
    expect(Object.fromEntries(problems)).to.deep.equal({});
  });

  it('an operation the TypeScript client lacks is reported by name', () => {
    const extra = operationsOf(withExtraOperation(doc)).find((op) => op.id === 'getPortfolio')!;
    expect(typescriptProblem(client, extra)).to.equal('no method');
  });

  describe('the Python clients (sync and async), checked by clients/python/tests/check_operations.py', () => {
    before(function () {
      // .ci/run sets it up in the background before npm test (scripts/python-clients.sh --setup).
      if (!existsSync(venvPython)) {
        console.log('      (skipped: no .venv-clients; scripts/python-clients.sh --setup makes it, with Python 3.11 and venv)');
        this.skip();
      }
    });

    it('has one per operation of the served document', async () => {
      const r = await pythonCheck(`${server.url}/openapi.json`);
      expect(r.out).to.match(/^\d+ operations, each with a typed method$/m);
      expect(r.status, r.out).to.equal(0);
    });

    it('reports an operation it lacks, in both clients, and fails', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'scores-ops-'));
      try {
        writeFileSync(join(dir, 'openapi.json'), JSON.stringify(withExtraOperation(doc)));
        const r = await pythonCheck(join(dir, 'openapi.json'));
        expect(r.status).to.equal(1);
        expect(r.out).to.include('get_portfolio: ScoresClient: no method').and.include('get_portfolio: AsyncScoresClient: no method');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
