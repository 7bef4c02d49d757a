import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';
import { TOOLS } from '../../src/app/mcp/server.js';

function run(script: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('The official MCP inspector CLI against the server (scripts/mcp-inspector.sh)', function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
  });
  after(() => server.stop());

  it('lists every tool and calls get_scores with the REST body', async () => {
    const { code, out } = await run(join(projectRoot(), 'scripts/mcp-inspector.sh'), [`${server.url}/mcp/http`, demoKey(server.dir, 'quant')]);
    expect(code, out).to.equal(0);
    expect(TOOLS).to.have.length(20);
    for (const { name } of TOOLS) expect(out).to.include(`"name": "${name}"`);
    const rest = (await (await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': demoKey(server.dir, 'quant') } })).json()) as Record<string, unknown>;
    const structured = /"structuredContent": (\{[\s\S]*?\n {2}\})/.exec(out);
    expect(structured, out).to.not.equal(null);
    expect(JSON.parse(structured![1]!)).to.deep.equal(rest);
  });
});
