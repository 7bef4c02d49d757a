/**
 * The reference's code samples (issue 45 item 3): every operation of the served /openapi.json
 * carries a curl sample (`x-codeSamples`), each one runs against a live demo server and gets a
 * status its operation documents (never a 5xx), and nothing else of the document changed.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { servedOpenApi } from '../../src/app/http/openapi.js';
import { projectRoot } from '../../src/core/paths.js';
import type { TestServer } from '../support/server.js';
import { demoKey, startTestServer } from '../support/server.js';

type Op = { responses: Record<string, unknown>; 'x-codeSamples'?: { lang: string; label: string; source: string }[] };
const CURL = ['/usr/bin/curl', '/bin/curl'].find(existsSync);

/** Runs a curl sample as a shell would: with curl when installed, else read into a fetch. */
async function run(sample: string, key: string): Promise<number> {
  if (CURL) {
    const args = ['-s', '-o', '/dev/null', '-w', '%{http_code}'];
    // Not execFileSync: the server answers in this very process.
    const { stdout } = await promisify(execFile)('sh', ['-c', sample.replace(/^curl/, `curl ${args.join(' ')}`)], { env: { ...process.env, SCORES_API_KEY: key }, encoding: 'utf8' });
    return Number(stdout.trim());
  }
  const text = sample.replace(/\\\n/g, ' ').replace(/\$SCORES_API_KEY/g, key);
  const method = /-X (\w+)/.exec(text)?.[1] ?? 'GET';
  const url = /"(https?:\/\/[^"]+)"/.exec(text)![1]!;
  const headers = Object.fromEntries([...text.matchAll(/-H "([^:]+): ([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
  const body = /-d '((?:[^']|'\\'')*)'/.exec(text)?.[1]?.replace(/'\\''/g, "'");
  return (await fetch(url, { method, headers, body })).status;
}

describe('Code samples in the reference', function () {
  let server: TestServer;
  let doc: { paths: Record<string, Record<string, Op>> };
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
    doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as typeof doc;
  });
  after(async () => server?.stop());

  const operations = () => Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method, path, op })));

  it('gives every operation a curl sample: its method, its path with example values, the X-API-Key header, this server', () => {
    expect(operations().length).to.be.greaterThan(20);
    for (const { method, path, op } of operations()) {
      const curl = op['x-codeSamples']?.find((s) => s.label === 'curl');
      expect(curl, `${method} ${path}`).to.not.equal(undefined);
      expect(curl!.lang).to.equal('Shell');
      expect(curl!.source).to.include('-H "X-API-Key: $SCORES_API_KEY"');
      expect(curl!.source).to.include(`"${server.running.baseUrl}${path.split('{')[0]}`);
      expect(curl!.source).to.not.match(/\{[a-z_]+\}/);
      if (method !== 'get') expect(curl!.source).to.include(`-X ${method.toUpperCase()}`);
    }
  });

  it('changes nothing else of the document: without x-codeSamples it is servedOpenApi of the spec', () => {
    const spec = JSON.parse(readFileSync(join(projectRoot(), 'src/app/http/generated/swagger.json'), 'utf8')) as Record<string, unknown>;
    const stripped = JSON.parse(JSON.stringify(doc)) as typeof doc;
    for (const ops of Object.values(stripped.paths)) for (const op of Object.values(ops)) delete op['x-codeSamples'];
    expect(stripped).to.deep.equal(JSON.parse(JSON.stringify(servedOpenApi(spec, server.running.baseUrl))));
  });

  it(`runs every curl sample against the live demo server (${CURL ? 'with curl' : 'as a fetch'}): a documented status, never a 5xx`, async function () {
    const key = demoKey(server.dir, 'quant');
    const seen: string[] = [];
    for (const { method, path, op } of operations()) {
      const sample = op['x-codeSamples']!.find((s) => s.label === 'curl')!.source.replace(server.running.baseUrl, server.url);
      const status = await run(sample, key);
      seen.push(`${method.toUpperCase()} ${path} → ${status}`);
      expect(status, `${method} ${path}`).to.be.within(200, 499);
      expect(Object.keys(op.responses), `${method} ${path}: ${status} is documented`).to.include(String(status));
    }
    expect(seen.filter((s) => / → 2\d\d$/.test(s)).length, seen.join('\n')).to.be.greaterThan(15);
  });
});
