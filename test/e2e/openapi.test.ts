import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/core/paths.js';
import type { TestServer } from '../support/server.js';
import { getJson, startTestServer, tempDir } from '../support/server.js';

const run = promisify(execFile);

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

/** `redocly lint` with the repo's redocly.yaml (the recommended ruleset), as JSON. */
async function lint(file: string): Promise<{ totals: { errors: number; warnings: number }; problems: LintProblem[] }> {
  const root = projectRoot();
  const cli = join(root, 'node_modules/@redocly/cli/bin/cli.js');
  const args = [cli, 'lint', file, '--config', join(root, 'redocly.yaml'), '--format', 'json'];
  // The machine has no internet: no telemetry, no update check.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1' };
  let stdout: string;
  try {
    ({ stdout } = await run(process.execPath, args, { cwd: root, env, maxBuffer: 32 * 1024 * 1024 }));
  } catch (err) {
    // It exits 1 when there are errors; the report is on stdout all the same.
    stdout = (err as { stdout?: string }).stdout ?? '';
    if (!stdout.trim()) throw err;
  }
  return JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: LintProblem[] };
}

const describeProblem = (p: LintProblem) => `${p.severity} ${p.ruleId} at ${p.location.map((l) => l.pointer).join(', ')}: ${p.message}`;

describe('The OpenAPI document', () => {
  let server: TestServer;
  const dir = tempDir('openapi-lint-');
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: 'https://api.scores.test' } });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes redocly lint with the recommended rules (warnings are printed, errors fail)', async () => {
    const { status, body } = await getJson(`${server.url}/openapi.json`);
    expect(status).to.equal(200);
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(body, null, 2));

    const report = await lint(file);
    const warnings = report.problems.filter((p) => p.severity !== 'error');
    const errors = report.problems.filter((p) => p.severity === 'error');
    if (warnings.length > 0) console.log(`      redocly lint warnings (${warnings.length}):\n${warnings.map((p) => `        ${describeProblem(p)}`).join('\n')}`);
    expect(errors.map(describeProblem), 'redocly lint errors').to.deep.equal([]);
    expect(report.totals.errors).to.equal(0);
  });
});
