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

  it('describes every error response as application/problem+json, with an example of each problem it names', async () => {
    const { body } = await getJson(`${server.url}/openapi.json`);
    const paths = (body as { paths: Record<string, Record<string, { responses: Record<string, { description: string; content: Record<string, { schema: unknown; examples: Record<string, { value: Record<string, unknown> }> }> }> }>> }).paths;
    let checked = 0;
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const where = `${method.toUpperCase()} ${path} ${status}`;
          expect(Object.keys(response.content), where).to.deep.equal(['application/problem+json']);
          const media = response.content['application/problem+json']!;
          expect(media.schema, where).to.deep.equal({ $ref: '#/components/schemas/ProblemDetails' });
          const examples = Object.entries(media.examples);
          expect(examples, where).to.not.be.empty;
          for (const [code, { value }] of examples) {
            expect(value, where).to.include({ code, status: Number(status), type: `https://api.scores.test/docs/errors#${code}` });
            expect(value['title'], where).to.be.a('string').and.not.be.empty;
          }
          checked++;
        }
      }
    }
    expect(checked).to.be.greaterThan(60);
    // A response that names its problems gets one example each.
    const score403 = paths['/v1/scores/{ticker}']!['get']!.responses['403']!;
    expect(Object.keys(score403.content['application/problem+json']!.examples)).to.deep.equal(['key_forbidden', 'coverage']);
  });

  it('types the query parameters the controllers parse as integers and dates, with their ranges and defaults', async () => {
    const { body } = await getJson(`${server.url}/openapi.json`);
    const doc = body as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: Record<string, unknown> }[] }>> };
    const param = (path: string, name: string) => doc.paths[path]!['get']!.parameters!.find((p) => p.name === name)!.schema;
    expect(param('/v1/screener', 'limit')).to.deep.equal({ type: 'integer', minimum: 1, maximum: 650, default: 100 });
    expect(param('/v1/screener', 'min_score')).to.deep.equal({ type: 'integer', minimum: 0, maximum: 100 });
    expect(param('/v1/signals', 'limit')).to.include({ type: 'integer', maximum: 200, default: 50 });
    expect(param('/v1/divergence', 'limit')).to.include({ type: 'integer', maximum: 100, default: 25 });
    expect(param('/v1/earnings', 'days')).to.deep.equal({ type: 'integer', minimum: 0, maximum: 60, default: 14 });
    expect(param('/v1/scores/{ticker}/history', 'start')).to.deep.equal({ type: 'string', format: 'date' });
    expect(param('/v1/scores/history', 'as_known_at')).to.deep.equal({ type: 'string', format: 'date-time' });
    // Only free-form text is left a bare string: a new integer or date parameter must be typed too.
    const bare: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const op of Object.values(ops)) {
        for (const p of op.parameters ?? []) {
          if (p.in === 'query' && JSON.stringify(p.schema) === '{"type":"string"}') bare.push(`${path} ${p.name}`);
        }
      }
    }
    // `since` there takes a date, an ISO instant or a restated_at timestamp.
    expect(bare.sort()).to.deep.equal(['/v1/scores/history since', '/v1/scores/history tickers', '/v1/usage/ledger cursor']);
  });

  it('is what the service sends: an error a client receives matches its documented example', async () => {
    const res = await fetch(`${server.url}/v1/scores/AAPL`);
    expect(res.status).to.equal(401);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const problem = (await res.json()) as Record<string, unknown>;
    const { body } = await getJson(`${server.url}/openapi.json`);
    const doc = body as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { examples: Record<string, { value: Record<string, unknown> }> }> }> }>> };
    const example = doc.paths['/v1/scores/{ticker}']!['get']!.responses['401']!.content['application/problem+json']!.examples['unauthorized']!.value;
    for (const field of ['type', 'title', 'status', 'code']) expect(example[field], field).to.equal(problem[field]);
  });
});
