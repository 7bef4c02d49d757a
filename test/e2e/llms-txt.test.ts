/**
 * /llms.txt as an agent reads it (issue 45 item 3): each "`tool`: mirrors METHOD PATH" line names
 * the endpoint the MCP server's own tool definition mirrors, and every guide is linked by its
 * absolute URL.
 */
import { expect } from 'chai';
import { TOOLS } from '../../src/app/mcp/server.js';
import { GUIDES } from '../../src/app/http/generated/docs.js';
import type { TestServer } from '../support/server.js';
import { startTestServer } from '../support/server.js';

/** The twin a tool's definition names: `describeTool` writes "(same as its REST twin GET /v1/…)". */
function twinOf(description: string): string {
  const m = /same as its REST twin (GET|POST|DELETE) (\S+?)\)/.exec(description);
  if (!m) throw new Error(`no REST twin in: ${description}`);
  return `${m[1]} ${m[2]}`;
}

describe('/llms.txt', function () {
  let server: TestServer;
  let text: string;
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
    text = await (await fetch(`${server.url}/llms.txt`)).text();
  });
  after(async () => server?.stop());

  it("maps each MCP tool to the endpoint its definition mirrors (list_webhooks: GET /v1/webhooks)", () => {
    const lines = new Map([...text.matchAll(/^- `([a-z_]+)`: mirrors (GET|POST|DELETE) (\S+),/gm)].map((m) => [m[1]!, `${m[2]} ${m[3]}`]));
    expect(TOOLS.length).to.be.greaterThan(10);
    expect([...lines.keys()].sort()).to.deep.equal(TOOLS.map((t) => t.name).sort());
    for (const tool of TOOLS) expect(lines.get(tool.name), tool.name).to.equal(twinOf(tool.description));
    expect(lines.get('list_webhooks')).to.equal('GET /v1/webhooks');
  });

  it('links every guide by its absolute URL, and each link answers 200', async () => {
    const base = server.running.baseUrl;
    const guides = [...GUIDES.map((g) => `/docs/${g.slug}`), '/docs/errors'];
    expect(guides).to.include.members(['/docs/getting-started', '/docs/sync', '/docs/webhooks', '/docs/exports', '/docs/ledger', '/docs/methodology', '/docs/sdks', '/docs/mcp']);
    for (const path of guides) {
      expect(text, path).to.match(new RegExp(`^- \\[[^\\]]+\\]\\(${(base + path).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\)$`, 'm'));
      expect((await fetch(`${server.url}${path}`)).status, path).to.equal(200);
    }
  });

  it('says how to install the SDKs, not only where they are in the repository', () => {
    expect(text).to.include('pip install "./clients/python[pandas]"');
    expect(text).to.include('npm install /path/to/scores-client-1.0.0.tgz');
  });

  it('tells an agent how to bound its spend: the dry run, the cap and the key budget, over REST and MCP', () => {
    const section = text.slice(text.indexOf('## Bound what you spend'), text.indexOf('## Docs'));
    for (const word of ['X-Dry-Run: true', 'dry_run: true', 'X-Credits-Cost', 'X-Max-Credits', 'max_credits', 'cost_exceeds_max', 'X-Key-Budget-Remaining', '_meta.key_budget_remaining', 'key_budget_exhausted']) {
      expect(section, word).to.include(word);
    }
  });
});
