import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { startTestServer, type TestServer } from '../support/server.js';

const root = projectRoot();
/** What scripts/generate-clients.mjs writes, and the base URL its server's document names. */
const GENERATED = ['clients/openapi.json', 'clients/typescript/src/generated/schema.ts', 'clients/typescript/src/generated/operations.ts', 'clients/python/src/scores_client/models.py', 'clients/python/src/scores_client/_operations.py'];
const PUBLIC_BASE_URL = 'https://api.example.com';
// datamodel-code-generator lives in the Python environment of scripts/python-clients.sh; without
// it the models are left to that script's own check (its pytest regenerates them).
const python = existsSync(join(root, '.venv-clients/bin/datamodel-codegen'));

function check(url: string, against = root): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const args = ['scripts/generate-clients.mjs', '--check', '--url', url, '--against', against, ...(python ? [] : ['--no-python'])];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/**
 * The client SDKs' generated code never drifts from the contract: the committed document, types and
 * models are what `npm run clients:generate` makes from a server of this checkout.
 */
describe('The generated client code (npm run clients:generate)', function () {
  this.timeout(180_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-03-01T23:00:00Z', env: { SCORES_DEMO: 'off', PUBLIC_BASE_URL } });
  });
  after(() => server?.stop());

  it("is what the generator makes from this checkout's served /openapi.json", async () => {
    const r = await check(server.url);
    expect(r.code, `${r.stderr}${r.stdout}`).to.equal(0);
    expect(r.stdout).to.include('up to date: clients/openapi.json, clients/typescript/src/generated/schema.ts');
  });

  it('is reported stale, naming each file, when the committed copy differs', async () => {
    const stale = mkdtempSync(join(tmpdir(), 'scores-stale-clients-'));
    try {
      for (const f of GENERATED) if (existsSync(join(root, f))) cpSync(join(root, f), join(stale, f));
      appendFileSync(join(stale, GENERATED[1]!), '// edited by hand\n');
      const r = await check(server.url, stale);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.include('stale generated code').and.include('clients/typescript/src/generated/schema.ts');
      expect(r.stderr).not.to.include('clients/openapi.json');
    } finally {
      rmSync(stale, { recursive: true, force: true });
    }
  });
});
