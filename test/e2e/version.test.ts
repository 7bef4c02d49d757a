import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { PLANS, TIERS } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS, describeCost, endpointOf } from '../../src/domain/rate-card.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

const NOW = '2019-03-01T23:00:00Z';
const root = projectRoot();
const packageVersion = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

/** The newest release of CHANGELOG.md (Keep a Changelog: `## [x.y.z] - date`; Unreleased is not one). */
function changelogVersion(): string {
  const m = /^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$/m.exec(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'));
  if (!m) throw new Error('CHANGELOG.md names no release');
  return m[1]!;
}

describe('One version, and /llms.txt for agents', function () {
  this.timeout(120_000);
  let server: TestServer;
  let mcp: Client;
  let tools: string[];

  before(async () => {
    server = await startTestServer({ now: NOW });
    mcp = new Client({ name: 'version-e2e', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': demoKey(server.dir, 'quant') } } }));
    tools = (await mcp.listTools()).tools.map((t) => t.name);
  });
  after(async () => {
    await mcp?.close();
    await server?.stop();
  });

  it("reports package.json's version as the document's info.version, the MCP server's version, the SDKs' and CHANGELOG.md's newest release", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { info: { version: string } };
    const ts = JSON.parse(readFileSync(join(root, 'clients/typescript/package.json'), 'utf8')) as { version: string };
    const py = /^version = "([^"]+)"$/m.exec(readFileSync(join(root, 'clients/python/pyproject.toml'), 'utf8'))?.[1];
    expect(packageVersion).to.match(/^\d+\.\d+\.\d+$/);
    expect({
      openapi: doc.info.version,
      mcp: mcp.getServerVersion()?.version,
      changelog: changelogVersion(),
      typescript_sdk: ts.version,
      python_sdk: py,
    }).to.deep.equal({ openapi: packageVersion, mcp: packageVersion, changelog: packageVersion, typescript_sdk: packageVersion, python_sdk: packageVersion });
  });

  it('serves /llms.txt without a key, as text: how to authenticate, where the docs are, and the version', async () => {
    const res = await fetch(`${server.url}/llms.txt`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
    const text = await res.text();
    expect(text.startsWith('# Scores API\n\n> ')).to.equal(true);
    expect(text).to.include('`X-API-Key`').and.include('`X-Credits-Remaining`').and.include(`Version ${packageVersion}.`);
    for (const path of ['/docs', '/openapi.json', '/docs/errors', '/license', '/mcp/http']) expect(text).to.include(`${server.running.baseUrl}${path}`);
    // Every link it gives answers.
    for (const [, url] of text.matchAll(/\]\((http[^)]+)\)/g)) expect((await fetch(url!.replace(server.running.baseUrl, server.url))).status, url).to.equal(200);
  });

  it("lists every endpoint with the rate card's price and minimum plan, and exactly the MCP server's tools", async () => {
    const text = await (await fetch(`${server.url}/llms.txt`)).text();
    for (const k of RATE_KEYS) expect(text).to.include(`- ${endpointOf(k)}: ${describeCost(k)}, ${RATE_CARD[k].min_tier} plan or higher`);
    expect(text).to.include('- GET /v1/earnings: 100 credits per call, builder plan or higher');
    const listed = [...text.matchAll(/^- `([a-z_]+)`: mirrors /gm)].map((m) => m[1]);
    expect([...listed].sort()).to.deep.equal([...tools].sort());
    for (const t of TIERS) expect(text).to.match(new RegExp(`^- ${t}: `, 'm'));
    expect(text).to.include(`- quant: $${PLANS.quant.monthly_price_usd}/month, ${PLANS.quant.monthly_allowance!.toLocaleString('en-US')} credits/month`);
  });
});
